// herod UI script. On every page of the UI origin (framed gateways) it
// registers, once the page has loaded, the service worker (sw.js) that
// writes framed replay pages without a round trip to the gateway. On the
// framed replay page it keeps the banner in step with the frame. The page
// at /web/<ts>/<url> on the UI origin holds the banner and an iframe
// (#herod-frame) showing the capture from the content origin. The frame's document belongs to someone else:
// this script believes only what the replay script (replay.js, the first
// script of every replayed document) says, and only in answer to a
// question:
//
//   - each time the frame loads, it asks the frame's window, with a fresh
//     random nonce, where it is ({type: "herod:who", nonce});
//   - the first answer carrying that nonce ({type: "herod:here", nonce,
//     url, ts}) from the content origin and from the frame's own window is
//     taken; replay.js registered its listener before any script of the
//     page, so its answer comes first, and later answers find the nonce
//     spent;
//   - a page's history.pushState ({type: "herod:moved", url}) is taken
//     only within the site the frame was last said to show, at its date.
//
// It then shows the capture's date, neighbours and URL (asked of the UI's
// own /api/banner) and keeps the address bar at /web/<ts>/<url>
// (history.replaceState: the frame's navigations are already entries of
// the tab's history).
// A framed page the service worker wrote (data-banner="pending") shows
// the URL alone until the answer of /api/banner comes.
(function () {
  "use strict";
  // The worker is registered after the page's load event: installing it
  // (its script, a worker thread) while the page and its frame load
  // delayed their load event by tens of ms (TestFramingParts).
  function register() {
    navigator.serviceWorker.register("/sw.js", { scope: "/web/", updateViaCache: "none" }).catch(function () {
      // no worker (a private window, a refusing browser): the gateway
      // writes the framed pages itself
    });
  }
  if (navigator.serviceWorker && window.isSecureContext) {
    if (document.readyState === "complete") {
      register();
    } else {
      window.addEventListener("load", function () {
        setTimeout(register, 0);
      });
    }
  }
  // The calendar's year overview: a month's bar unfolds the month it
  // leads to.
  function openTarget() {
    var el = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (el && el.tagName === "DETAILS") {
      el.open = true;
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  var frame = document.getElementById("herod-frame");
  if (!frame || !window.crypto || !window.fetch) {
    return;
  }
  var content = frame.getAttribute("data-content-origin");
  var current = { url: frame.getAttribute("data-url"), ts: frame.getAttribute("data-ts") };
  var nonce = "";
  var tsPattern = /^[0-9]{1,17}$/;

  function fresh() {
    var a = new Uint32Array(4);
    window.crypto.getRandomValues(a);
    return Array.prototype.join.call(a, "-");
  }

  function host(u) {
    try {
      var p = new URL(u);
      return p.protocol === "http:" || p.protocol === "https:" ? p.host : "";
    } catch (e) {
      return "";
    }
  }

  function text(id, s) {
    var el = document.getElementById(id);
    if (el) {
      el.textContent = s;
    }
  }

  function link(id, ts, label) {
    var a = document.getElementById(id);
    if (!a) {
      return;
    }
    if (!ts) {
      a.hidden = true;
      return;
    }
    a.hidden = false;
    a.href = "/web/" + ts + "/" + current.url;
    var span = a.querySelector("span");
    if (span) {
      span.textContent = label;
    }
  }

  // show moves the banner and the address bar to url at ts.
  function show(url, ts) {
    if (url === current.url && ts === current.ts) {
      return;
    }
    current = { url: url, ts: ts };
    fill(url, ts);
  }

  // fill shows url at ts in the banner and the address bar and asks the
  // gateway for the capture's date and neighbours.
  function fill(url, ts) {
    text("herod-url", url);
    var form = document.querySelector("#herod-banner form");
    if (form) {
      form.elements.url.value = url;
      form.elements.date.value = ts;
    }
    try {
      history.replaceState(null, "", "/web/" + ts + "/" + url);
    } catch (e) {
      // an address the browser refuses: keep the old one
    }
    var dates = document.getElementById("herod-dates");
    if (dates) {
      dates.href = "/web/*/" + url;
    }
    fetch("/api/banner?url=" + encodeURIComponent(url) + "&ts=" + ts, { credentials: "omit" }).then(function (r) {
      if (!r.ok) {
        throw new Error(r.status);
      }
      return r.json();
    }).then(function (b) {
      if (current.url !== url || current.ts !== ts) {
        return; // moved on meanwhile
      }
      text("herod-date", b.date);
      text("herod-prov", b.provenance || "");
      document.title = url + " · " + b.date + " · herod";
      link("herod-prev", b.prevTs, b.prevLabel);
      link("herod-next", b.nextTs, b.nextLabel);
      text("herod-dates", b.count + (b.count === 1 ? " capture" : " captures"));
    }, function () {
      if (current.url !== url || current.ts !== ts) {
        return;
      }
      text("herod-date", "(not archived)");
      text("herod-prov", "");
      document.title = url + " · herod";
      link("herod-prev", "", "");
      link("herod-next", "", "");
      text("herod-dates", "all dates");
    });
  }

  if (frame.getAttribute("data-banner") === "pending") {
    fill(current.url, current.ts);
  }

  frame.addEventListener("load", function () {
    nonce = fresh();
    try {
      frame.contentWindow.postMessage({ type: "herod:who", nonce: nonce }, content);
    } catch (e) {
      nonce = "";
    }
  });

  window.addEventListener("message", function (e) {
    if (e.origin !== content || e.source !== frame.contentWindow) {
      return;
    }
    var m = e.data;
    if (!m || typeof m !== "object" || typeof m.url !== "string" || host(m.url) === "") {
      return;
    }
    if (m.type === "herod:here") {
      if (nonce === "" || m.nonce !== nonce || typeof m.ts !== "string" || !tsPattern.test(m.ts)) {
        return;
      }
      nonce = "";
      show(m.url, m.ts);
    } else if (m.type === "herod:moved" && host(m.url) === host(current.url)) {
      show(m.url, current.ts);
    }
  });

  // herod:open: a document of the frame asks for a page in a new tab or
  // in this window, which the frame's sandbox lets it open in neither
  // (replay.js; an error page's script). Only archive URLs of the content
  // origin are opened, as this origin's framed pages, and this origin's
  // own replay, dates and home pages; a new tab gets no opener. Anything
  // else, the live web first, is refused.
  var contentOrigin = "";
  try {
    contentOrigin = new URL(content).origin;
  } catch (e) {
    // no content origin: nothing is opened
  }
  var uiPaths = /^\/(?:web\/.*|ring|api\/status)?$/;
  var archivePath = /^\/web\/([0-9]{1,17})(?:[a-z]{2}_)?\/(.+)$/;

  // inFrame reports whether w is the frame's window or one nested in it.
  function inFrame(w) {
    for (var i = 0; w && i < 32; i++) {
      if (w === frame.contentWindow) {
        return true;
      }
      if (w.parent === w) {
        return false;
      }
      w = w.parent;
    }
    return false;
  }

  // destination returns the path of this origin that opens href, or "".
  function destination(href) {
    var u;
    try {
      u = new URL(href);
    } catch (e) {
      return "";
    }
    if (u.origin === location.origin) {
      return uiPaths.test(u.pathname) ? u.pathname + u.search + u.hash : "";
    }
    var m = u.origin === contentOrigin ? archivePath.exec(u.pathname) : null;
    if (!m) {
      return "";
    }
    var t;
    try {
      t = new URL(m[2] + u.search + u.hash);
    } catch (e) {
      return "";
    }
    return t.protocol === "http:" || t.protocol === "https:" ? "/web/" + m[1] + "/" + t.href : "";
  }

  window.addEventListener("message", function (e) {
    var m = e.data;
    if (!m || typeof m !== "object" || m.type !== "herod:open" || typeof m.href !== "string" ||
        (e.origin !== contentOrigin && e.origin !== "null") || !inFrame(e.source)) {
      return;
    }
    var dest = destination(m.href);
    if (dest === "") {
      return;
    }
    if (m.how === "top") {
      location.assign(dest);
    } else if (m.how === "tab") {
      window.open(dest, "_blank", "noopener");
    } else if (m.how === "replace" && e.source === frame.contentWindow && dest.indexOf("/web/*/") === 0) {
      // The frame followed a link to a page not archived: this origin's
      // own page for it takes the framed page's place in the history.
      location.replace(dest);
    } else if (m.how === "reframe" && e.source === frame.contentWindow) {
      reframe(dest);
    }
  });

  // reframe shows the capture dest (/web/<ts>/<url>), a document the
  // browser shows with its own viewer (a PDF), in the frame without its
  // sandbox attribute, which keeps that viewer out: as its archived bytes
  // (id_), which the content origin sends sandboxed by their CSP, as it
  // does every document (docs/replay.md). The frame's entry is replaced,
  // so that Back leads to the page before.
  function reframe(dest) {
    var m = /^\/web\/([0-9]{1,17})\/(.+)$/.exec(dest);
    if (!m || host(m[2]) === "") {
      return;
    }
    frame.removeAttribute("sandbox");
    try {
      frame.contentWindow.location.replace(content + "/web/" + m[1] + "id_/" + m[2]);
    } catch (err) {
      frame.src = content + "/web/" + m[1] + "id_/" + m[2];
    }
    show(m[2], m[1]);
  }
})();
