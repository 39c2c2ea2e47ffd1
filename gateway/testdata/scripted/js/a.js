export const a = "A";
