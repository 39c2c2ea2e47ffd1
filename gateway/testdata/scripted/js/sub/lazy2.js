export const lazy2 = "L2";
