// harness.js runs gateway/replay.js in a stand-in for a browser page and
// reports what the page's scripts would have asked for. TestReplayJS runs
// it with node:
//
//   node harness.js replay.js <gateway page URL> <data-herod-url> <data-herod-ts> [<document base URL>]
//
// and writes a JSON array of cases to its stdin, each {op, arg, tag, name};
// it prints the JSON array of the URLs each case produced. replay.js is
// the script as the gateway serves it (with its attribute table). The
// stand-in has what replay.js touches: location, document.baseURI,
// currentScript and createElement, fetch, Request, XMLHttpRequest,
// history, window.open, and element classes whose URL properties are
// accessors on their prototypes, as in browsers.
"use strict";
const fs = require("fs");
const vm = require("vm");

const [shimPath, pageURL, archivedURL, ts, baseURI] = process.argv.slice(2);
const seen = [];

class Element {
  constructor(tag) {
    this.tagName = tag.toUpperCase();
    this.attrs = {};
  }
  setAttribute(name, value) {
    this.attrs[String(name).toLowerCase()] = String(value);
  }
  getAttribute(name) {
    return this.attrs[String(name).toLowerCase()];
  }
}
function elementClass(parent, props) {
  const C = class extends parent {};
  for (const p of props) {
    Object.defineProperty(C.prototype, p, {
      configurable: true,
      enumerable: true,
      get() { return this.attrs[p]; },
      set(v) { this.attrs[p] = String(v); },
    });
  }
  return C;
}
const HTMLMediaElement = elementClass(Element, ["src"]);
const classes = {
  HTMLImageElement: elementClass(Element, ["src", "srcset"]),
  HTMLScriptElement: elementClass(Element, ["src"]),
  HTMLLinkElement: elementClass(Element, ["href"]),
  HTMLIFrameElement: elementClass(Element, ["src"]),
  HTMLAnchorElement: elementClass(Element, ["href"]),
  HTMLFormElement: elementClass(Element, ["action"]),
  HTMLObjectElement: elementClass(Element, ["data"]),
  HTMLMediaElement,
  HTMLVideoElement: elementClass(HTMLMediaElement, ["poster"]),
};
const tagClass = { img: "HTMLImageElement", script: "HTMLScriptElement", link: "HTMLLinkElement",
  iframe: "HTMLIFrameElement", a: "HTMLAnchorElement", form: "HTMLFormElement",
  object: "HTMLObjectElement", video: "HTMLVideoElement", audio: "HTMLMediaElement" };

class XMLHttpRequest {
  open(method, url) { seen.push(String(url)); }
}
const location = new URL(pageURL);
const win = {
  location,
  document: {
    baseURI: baseURI || location.href,
    createElement: (tag) => (classes[tagClass[tag]] ? new classes[tagClass[tag]](tag) : new Element(tag)),
    currentScript: { getAttribute: (n) => ({ "data-herod-url": archivedURL, "data-herod-ts": ts })[n] },
  },
  history: {
    pushState(s, t, url) { seen.push(String(url)); },
    replaceState(s, t, url) { seen.push(String(url)); },
  },
  fetch(input) { seen.push(input instanceof Request ? input.url : String(input)); return Promise.resolve(); },
  open(url) { seen.push(String(url)); },
  XMLHttpRequest, Element, URL, Request, ...classes,
};
win.window = win;
vm.createContext(win);
vm.runInContext(fs.readFileSync(shimPath, "utf8"), win, { filename: "replay.js" });
if (!win.__herodReplay) {
  throw new Error("replay.js did not install itself");
}
vm.runInContext(fs.readFileSync(shimPath, "utf8"), win, { filename: "replay.js" }); // a second copy is a no-op

const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = [];
for (const c of cases) {
  seen.length = 0;
  const el = c.tag ? new win[tagClass[c.tag] || "Element"](c.tag) : null;
  switch (c.op) {
    case "fetch": win.fetch(c.arg); break;
    case "fetchRequest": win.fetch(new Request(c.arg)); break;
    case "fetchPost": win.fetch(new Request(c.arg, { method: "POST", body: "x" })); break;
    case "xhr": new win.XMLHttpRequest().open("GET", c.arg); break;
    case "pushState": win.history.pushState(null, "", c.arg); break;
    case "replaceState": win.history.replaceState(null, "", c.arg); break;
    case "open": win.open(c.arg); break;
    case "prop": el[c.name] = c.arg; seen.push(el.attrs[c.name]); break;
    case "attr": el.setAttribute(c.name, c.arg); seen.push(el.getAttribute(c.name)); break;
    default: throw new Error("unknown op " + c.op);
  }
  if (seen.length !== 1) {
    throw new Error(`${c.op} ${c.arg}: ${seen.length} requests`);
  }
  out.push(seen[0]);
}
process.stdout.write(JSON.stringify(out));
