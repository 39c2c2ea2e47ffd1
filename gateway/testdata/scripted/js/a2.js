export const a = "A2";
