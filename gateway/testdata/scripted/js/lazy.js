export const lazy = "L";
