import { a } from "http://example.com/js/a.js";
onmessage = function (e) { postMessage("M" + a + ":" + e.data); };
