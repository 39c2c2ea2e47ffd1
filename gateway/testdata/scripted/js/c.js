globalThis.c = "C";
