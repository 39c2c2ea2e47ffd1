// Static imports: absolute, root-relative and relative specifiers.
import { a } from "http://example.com/js/a.js";
import b from "/js/b.js";
import "./c.js";
export { a as again } from "//example.com/js/a2.js";
document.getElementById("static").textContent = "static:" + a + b + globalThis.c;
// Dynamic import of a specifier relative to this script (js/), not the page.
import("./sub/lazy2.js").then(function (m) { document.getElementById("dynamic").textContent = "dynamic:" + m.lazy2; });
