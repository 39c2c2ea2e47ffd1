// herod's service worker on the UI origin (scope /web/). It answers a
// navigation to a replay, /web/<ts>/<url>, with the framed replay page
// written here, from the shell the gateway put in this script: the
// banner's URL and an iframe of the content origin's replay, which starts
// loading at once, without a round trip to the gateway first. ui.js then
// asks /api/banner for the capture's date and neighbours. Everything else
// (dates, search, status, modifiers such as id_) goes to the network. The
// shell's response carries the UI origin's security headers, as the
// gateway's own framed page does. The gateway writes the first line,
//   var HEROD = {shell, headers, content, frameless};
// before this file. Archived pages cannot reach this worker: they run on
// the content origin, and a service worker controls only its own origin.
"use strict";

var replayPath = /^\/web\/([0-9]{1,17})\/(.+)$/;

function escapeHTML(s) {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

self.addEventListener("install", function (e) {
  self.skipWaiting();
  if (HEROD.frameless || !e.addRoutes) {
    return;
  }
  // Static routes (Chromium 123+): everything but a replay's navigation
  // goes to the network without starting this worker.
  try {
    e.waitUntil(e.addRoutes({
      condition: {
        or: [
          { not: { requestMode: "navigate" } },
          { not: { urlPattern: new URLPattern({ pathname: "/web/:ts(\\d{1,17})/*" }) } }
        ]
      },
      source: "network"
    }).catch(function () {}));
  } catch (err) {
    // routes this browser does not know: the fetch handler decides alone
  }
});

self.addEventListener("activate", function (e) {
  if (HEROD.frameless) {
    // The gateway no longer frames replays: step aside for good.
    e.waitUntil(self.registration.unregister());
  }
});

self.addEventListener("fetch", function (e) {
  var r = e.request;
  // Top-level navigations only: a framed one (another page embedding a
  // replay) goes to the gateway, whose answer forbids framing.
  if (HEROD.frameless || r.mode !== "navigate" || r.destination !== "document" || r.method !== "GET") {
    return;
  }
  var u = new URL(r.url);
  var m = u.origin === self.location.origin ? replayPath.exec(u.pathname) : null;
  if (!m) {
    return;
  }
  var values = { SRC: HEROD.content + u.pathname + u.search, URL: m[2] + u.search, TS: m[1] };
  // One pass: a URL holding "@@TS@@" stays as it is.
  var page = HEROD.shell.replace(/@@(SRC|URL|TS)@@/g, function (_, k) {
    return escapeHTML(values[k]);
  });
  e.respondWith(new Response(page, { status: 200, headers: HEROD.headers }));
});
