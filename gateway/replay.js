// herod replay script. The gateway inserts it, as
//   <script src="/static/replay.js" data-herod-url="URL" data-herod-ts="TS">,
// before the first element of a replayed HTML document that can run a
// script. The server rewrote the document's markup, and the URLs of static
// module imports and dynamic import() in its scripts; this rewrites the
// URLs the page's scripts make while they run, so that they are answered
// from the archive at the same timestamp instead of being refused by the
// replay's Content-Security-Policy (or, for a root-relative URL such as
// "/api", reaching the gateway's own pages):
//
//   - fetch(), XMLHttpRequest.open and navigator.sendBeacon: the archived
//     bytes (modifier id_);
//   - dynamic import(), which the server turned into a call of
//     __herodImport with the importing script's archived URL;
//   - history.pushState / replaceState and window.open: archive pages;
//   - the page's location, which the server renamed __herodLocation in
//     its scripts: it reads the archived URL and moves in the archive;
//   - navigations of the document (location.href = ..., location.assign,
//     a scripted click), caught by the Navigation API's navigate event;
//   - the attributes the server rewrites, set with setAttribute, and the
//     properties of the same name of the elements the server's table names
//     (img.src, a.href, video.poster, source.srcset…; frames get if_);
//   - markup that scripts write as text: innerHTML, outerHTML,
//     insertAdjacentHTML, document.write and writeln (the same attributes,
//     <style> blocks);
//
// Which attribute of which element holds a URL, and of what kind, is the
// server's table (internal/webrefs), which the gateway writes into this
// script where it says herod:webrefs when it serves it.
//   - the script URLs of new Worker and SharedWorker.
//
// A URL already in the archive keeps its target and timestamp.
//
// It also confines the page: navigator.serviceWorker.register is refused
// (the content origin answers 403 to service worker scripts anyway), and
// localStorage, sessionStorage and document.cookie are the document's own,
// in memory, so that no replay finds state another left on the content
// origin all archived sites share. In
// framed replay (data-herod-ui names the UI origin) it answers the framed
// page's question "where are you?" (see ui.js) with the archived URL and
// timestamp it was started with, tells it of pushState moves, and asks
// it (herod:open) to open what the frame's sandbox keeps the page from
// opening: links, GET forms and window.open bound for a new window or the
// top window; a document opened outside the frame reopens itself inside
// it. In frameless replay data-herod-home names the UI origin, whose
// pages (the banner's home link and search box) are left to open.
(function () {
  "use strict";
  var me = document.currentScript;
  if (!me || window.__herodReplay) {
    return;
  }
  var pageURL = me.getAttribute("data-herod-url");
  var ts = me.getAttribute("data-herod-ts");
  if (!pageURL || !ts) {
    return;
  }
  window.__herodReplay = true;
  var origin = location.origin;
  var ui = me.getAttribute("data-herod-ui") || "";
  var home = me.getAttribute("data-herod-home") || "";
  var webPath = /^\/web\/([0-9]{1,17})([a-z]{2}_)?\/(.*)$/;
  var skip = /^\s*(javascript|data|mailto|tel|about|blob|sms|urn|vbscript):/i;
  var here = webPath.exec(location.pathname);
  var pageMod = here && here[2] ? here[2] : "";

  var scheme = /^\s*[a-z][a-z0-9+.\-]*:/i;

  // The attribute table: rows {tag, name, kind, use}; tag "*" is any
  // element, and an element's own row wins over it (webrefs.Lookup).
  var table = /*herod:webrefs*/[];
  var kinds = {};
  table.forEach(function (r) {
    kinds[r.tag + " " + r.name] = r.kind;
  });
  // attrKind returns the kind of URL attribute name of element tag holds
  // (both lower case): "url", "frame", "srcset", "style", "refresh",
  // "integrity", or undefined.
  function attrKind(tag, name) {
    var k = kinds[tag + " " + name];
    return k !== undefined ? k : kinds["* " + name];
  }
  function tagOf(el) {
    return el && el.tagName ? String(el.tagName).toLowerCase() : "";
  }

  // Service workers would outlive the page and answer for every capture.
  if (typeof ServiceWorkerContainer === "function" && ServiceWorkerContainer.prototype) {
    try {
      Object.defineProperty(ServiceWorkerContainer.prototype, "register", {
        configurable: false,
        writable: false,
        value: function () {
          return Promise.reject(new Error("herod: archived pages cannot register service workers"));
        }
      });
    } catch (e) {
      // already locked: the server refuses the worker's script
    }
  }

  // Stored state. Every archived site replays on the content origin, so
  // the origin's localStorage, sessionStorage and cookies would let one
  // site's page leave state for another site's replay to find (and a
  // hostile page poison it). Each replayed document instead starts as the
  // crawler found its page, with nothing stored, and keeps what it stores
  // to itself, in memory: localStorage, sessionStorage and document.cookie
  // are its own, and the asynchronous cookieStore is withdrawn.
  function memoryStorage() {
    var items = new Map();
    var api = {
      getItem: function (k) {
        k = String(k);
        return items.has(k) ? items.get(k) : null;
      },
      setItem: function (k, v) {
        items.set(String(k), String(v));
      },
      removeItem: function (k) {
        items.delete(String(k));
      },
      clear: function () {
        items.clear();
      },
      key: function (i) {
        var keys = Array.from(items.keys());
        i = Number(i);
        return i >= 0 && i < keys.length ? keys[i] : null;
      }
    };
    var target = typeof Storage === "function" ? Object.create(Storage.prototype) : {};
    return new Proxy(target, {
      get: function (t, p) {
        if (p === "length") {
          return items.size;
        }
        if (typeof p === "symbol") {
          return t[p];
        }
        if (Object.prototype.hasOwnProperty.call(api, p)) {
          return api[p];
        }
        return items.has(p) ? items.get(p) : undefined;
      },
      set: function (t, p, v) {
        if (typeof p !== "symbol") {
          items.set(p, String(v));
        }
        return true;
      },
      deleteProperty: function (t, p) {
        items.delete(String(p));
        return true;
      },
      has: function (t, p) {
        return typeof p !== "symbol" && (items.has(p) || Object.prototype.hasOwnProperty.call(api, p) || p === "length");
      },
      ownKeys: function () {
        return Array.from(items.keys());
      },
      getOwnPropertyDescriptor: function (t, p) {
        return items.has(p) ? { value: items.get(p), writable: true, enumerable: true, configurable: true } : undefined;
      }
    });
  }
  ["localStorage", "sessionStorage"].forEach(function (name) {
    var own = memoryStorage();
    try {
      Object.defineProperty(window, name, { configurable: true, enumerable: true, get: function () { return own; } });
    } catch (e) {
      // not configurable here: the origin's storage stays
    }
  });
  var jar = new Map(); // the document's cookies: name -> value
  try {
    Object.defineProperty(document, "cookie", {
      configurable: true,
      enumerable: true,
      get: function () {
        var out = [];
        jar.forEach(function (v, k) {
          out.push(k === "" ? v : k + "=" + v);
        });
        return out.join("; ");
      },
      set: function (v) {
        var parts = String(v).split(";");
        var pair = parts[0];
        var eq = pair.indexOf("=");
        var name = (eq < 0 ? "" : pair.slice(0, eq)).trim();
        var value = (eq < 0 ? pair : pair.slice(eq + 1)).trim();
        var gone = false;
        for (var i = 1; i < parts.length; i++) {
          var a = parts[i].trim().toLowerCase();
          if (/^max-age\s*=\s*(-|0+$)/.test(a)) {
            gone = true;
          } else if (a.indexOf("expires=") === 0) {
            var at = Date.parse(parts[i].trim().slice(8));
            gone = gone || (!isNaN(at) && at <= Date.now());
          }
        }
        if (gone) {
          jar.delete(name);
        } else {
          jar.set(name, value);
        }
      }
    });
  } catch (e) {
    // not configurable here: the origin's cookies stay
  }
  if ("cookieStore" in window) {
    try {
      delete window.cookieStore;
      if ("cookieStore" in window) {
        Object.defineProperty(window, "cookieStore", { configurable: true, value: undefined });
      }
    } catch (e) {
      // kept: pages that use it share the origin's cookies
    }
  }

  var up = null; // the framed replay page, when this document is its frame
  if (ui !== "" && typeof window.addEventListener === "function") {
    if (window.top === window.self) {
      location.replace(ui + "/web/" + ts + "/" + pageURL);
      return;
    }
    if (window.parent === window.top) {
      up = window.parent;
      window.addEventListener("message", function (e) {
        var m = e.data;
        if (e.origin !== ui || e.source !== up || !m || m.type !== "herod:who" || typeof m.nonce !== "string") {
          return;
        }
        up.postMessage({ type: "herod:here", nonce: m.nonce, url: currentURL(), ts: ts }, ui);
      }, true);
    }
  }

  // currentURL returns the archived URL the document shows: the one it
  // was replayed as, or where a pushState within the same site moved it.
  function currentURL() {
    var m = webPath.exec(location.pathname);
    if (m && location.origin === origin) {
      var u = m[3] + location.search;
      try {
        if (new URL(u).host === new URL(pageURL).host) {
          return u;
        }
      } catch (e) {
        // fall through
      }
    }
    return pageURL;
  }

  // archiveURL returns the gateway URL that replays ref, a URL the page's
  // script made, with modifier mod; ref itself when it is not an http(s)
  // URL. A relative URL resolves against base, an archived URL, when given
  // (the script that made it), else against the archived page (or its
  // archived <base>), as the server resolves the page's own links: against
  // the gateway's address, "../" would climb into "/web/<ts>/".
  function archiveURL(ref, mod, base) {
    if (ref === null || ref === undefined) {
      return ref;
    }
    var s = String(ref);
    if (s === "" || s.charAt(0) === "#" || skip.test(s)) {
      return ref;
    }
    var u;
    try {
      if (scheme.test(s)) {
        u = new URL(s);
      } else if (/^\s*[\/\\]{2}/.test(s)) {
        u = new URL(s, pageURL); // "//cdn/x" takes the archived page's scheme
      } else if (/^\s*[\/\\]/.test(s)) {
        u = new URL(s, origin); // "/x": an archive path or the site's root, below
      } else {
        u = new URL(s, base || archivedBase());
      }
    } catch (e) {
      return ref;
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      return ref;
    }
    var target = u.href;
    var when = ts;
    if (u.origin === origin) {
      var m = webPath.exec(u.pathname);
      if (m) {
        // Already in the archive: keep its target and timestamp, set the
        // modifier.
        when = m[1];
        target = m[3] + u.search + u.hash;
      } else {
        // A root-relative URL ("/api") means the archived site's root.
        try {
          target = new URL(u.pathname + u.search + u.hash, base || archivedBase()).href;
        } catch (e) {
          return ref;
        }
      }
    }
    return origin + "/web/" + when + (mod || "") + "/" + target;
  }

  // archivedBase returns the archived URL the document's relative URLs
  // resolve against: its <base href>, which the server rewrote into the
  // archive, or else the page's own.
  function archivedBase() {
    try {
      var b = new URL(document.baseURI);
      var m = b.origin === origin && webPath.exec(b.pathname);
      if (m) {
        return m[3] + b.search;
      }
    } catch (e) {
      // fall through
    }
    return pageURL;
  }

  var space = /[ \t\n\r\f]/;

  // archiveSrcset rewrites the URLs of an srcset value, split as HTML
  // splits it (canon.SrcsetURLs on the server): a URL runs to whitespace,
  // so a data: URL keeps its comma.
  function archiveSrcset(v) {
    if (v === null || v === undefined) {
      return v;
    }
    var s = String(v);
    var out = "";
    var i = 0;
    while (i < s.length) {
      var j = i;
      while (j < s.length && (space.test(s.charAt(j)) || s.charAt(j) === ",")) {
        j++;
      }
      out += s.slice(i, j);
      i = j;
      if (i >= s.length) {
        break;
      }
      while (j < s.length && !space.test(s.charAt(j))) {
        j++;
      }
      var k = j;
      while (k > i && s.charAt(k - 1) === ",") {
        k--;
      }
      out += archiveURL(s.slice(i, k), "") + s.slice(k, j);
      i = j;
      if (k < j) {
        continue; // the commas ended this candidate
      }
      var inParens = false; // the standard's "in parens" state: no nesting
      for (; j < s.length; j++) {
        var c = s.charAt(j);
        if (c === "(") {
          inParens = true;
        } else if (c === ")") {
          inParens = false;
        } else if (c === "," && !inParens) {
          break;
        }
      }
      out += s.slice(i, j);
      i = j;
    }
    return out;
  }

  var nativeFetch = window.fetch;
  if (typeof nativeFetch === "function") {
    window.fetch = function (input, init) {
      try {
        if (typeof Request === "function" && input instanceof Request) {
          // Only a request without a body is rebuilt (the gateway
          // answers GET and HEAD only; rebuilding would consume a body).
          var to = archiveURL(input.url, "id_");
          if (to !== input.url && (input.method === "GET" || input.method === "HEAD")) {
            input = new Request(to, input);
          }
        } else if (input !== undefined && input !== null) {
          input = archiveURL(String(input), "id_");
        }
      } catch (e) {
        return Promise.reject(e);
      }
      return nativeFetch.call(window, input, init);
    };
  }

  if (typeof XMLHttpRequest === "function") {
    var open = XMLHttpRequest.prototype.open;
    XMLHttpRequest.prototype.open = function (method, url) {
      var args = Array.prototype.slice.call(arguments);
      if (args.length > 1) {
        args[1] = archiveURL(url, "id_");
      }
      return open.apply(this, args);
    };
  }

  ["pushState", "replaceState"].forEach(function (name) {
    var orig = history[name];
    if (typeof orig !== "function") {
      return;
    }
    history[name] = function (state, title, url) {
      if (arguments.length > 2 && url !== undefined && url !== null) {
        var r = orig.call(history, state, title, archiveURL(url, pageMod));
        if (up !== null) {
          up.postMessage({ type: "herod:moved", url: currentURL() }, ui);
        }
        return r;
      }
      return orig.apply(history, arguments);
    };
  });

  // The document's location as the archived page knew it. The server
  // renames the location the page's scripts name to __herodLocation
  // (rewritejs.go), which reads the archived URL the document shows
  // (currentURL, with the real fragment): a client-side router reading
  // location.pathname finds its route, not /web/<ts>/<url>. Setting it,
  // assign and replace move through the archive.
  var real = location;
  var shown = function () {
    return new URL(currentURL() + real.hash);
  };
  var go = function (to, replace) {
    var dest = archiveURL(new URL(String(to), shown().href).href, pageMod === "if_" || pageMod === "fr_" ? pageMod : "");
    if (replace) {
      real.replace(dest);
    } else {
      real.assign(dest);
    }
  };
  var herodLocation = {
    assign: function (u) { go(u, false); },
    replace: function (u) { go(u, true); },
    reload: function () { real.reload(); },
    toString: function () { return shown().href; }
  };
  ["href", "protocol", "host", "hostname", "port", "pathname", "search", "hash", "origin"].forEach(function (k) {
    Object.defineProperty(herodLocation, k, {
      enumerable: true,
      get: function () { return shown()[k]; },
      set: function (v) {
        if (k === "hash") {
          real.hash = v;
        } else if (k === "href") {
          go(v, false);
        } else if (k !== "origin") {
          var u = shown();
          u[k] = v;
          go(u.href, false);
        }
      }
    });
  });
  Object.defineProperty(window, "__herodLocation", {
    configurable: false,
    get: function () { return herodLocation; },
    set: function (v) { go(v, false); }
  });

  // Framed, the frame's sandbox lets no document in it open a window or
  // navigate the top window. What would (a link or form whose target is a
  // new window or the top, window.open) asks the framed page instead
  // (herod:open, see ui.js), which opens the archive's framed page of the
  // same URL itself: in a new tab with no opener, or in its own window.
  // archiveTop is the document of the frame itself (this one, or the
  // ancestor this one is nested in); null unframed.
  var archiveTop = null;
  if (ui !== "" && window.top !== window.self) {
    try {
      archiveTop = window;
      while (archiveTop.parent !== window.top) {
        archiveTop = archiveTop.parent;
      }
    } catch (e) {
      archiveTop = null;
    }
  }

  // frameNamed reports whether a frame of the archived page is named name.
  function frameNamed(w, name, depth) {
    for (var i = 0; i < w.length && depth < 16; i++) {
      try {
        if (w[i].name === name || frameNamed(w[i], name, depth + 1)) {
          return true;
        }
      } catch (e) {
        // another origin's frame: not searched
      }
    }
    return false;
  }

  // leaves returns where a navigation of target from this document goes
  // when it leaves the frame: "tab" (a new window), "top", or "" when it
  // stays in the frame (its own window or a frame of the page).
  function leaves(target) {
    var t = target === undefined || target === null ? "" : String(target);
    switch (t.toLowerCase()) {
    case "":
    case "_self":
      return "";
    case "_blank":
      return "tab";
    case "_top":
      return "top";
    case "_parent":
      return window === archiveTop || window.parent === archiveTop ? "top" : "";
    }
    if (archiveTop !== null && archiveTop.name === t) {
      return window === archiveTop ? "" : "top"; // the page's own top
    }
    return archiveTop !== null && frameNamed(archiveTop, t, 0) ? "" : "tab";
  }

  // openInArchive asks the framed page to open href, an archive URL, as
  // how says ("tab" or "top").
  function openInArchive(href, how) {
    window.top.postMessage({ type: "herod:open", href: String(href), how: how }, ui);
  }

  var nativeOpen = window.open;
  if (typeof nativeOpen === "function") {
    window.open = function (url, target) {
      var args = Array.prototype.slice.call(arguments);
      if (args.length > 0 && url !== undefined && url !== null && url !== "") {
        args[0] = archiveURL(url, "");
      }
      if (archiveTop !== null) {
        var how = leaves(args.length > 1 ? target : "_blank");
        if (how !== "") {
          if (typeof args[0] === "string" && args[0].indexOf(origin + "/web/") === 0) {
            openInArchive(args[0], how);
          }
          return null;
        }
      }
      return nativeOpen.apply(window, args);
    };
  }

  // baseTarget is the document's default target (its first <base target>).
  function baseTarget() {
    var b = document.querySelector("base[target]");
    return b ? b.getAttribute("target") : "";
  }

  // Links and forms that leave the frame, once the page's own handlers
  // (on elements and the document) have let them go.
  if (archiveTop !== null && typeof window.addEventListener === "function") {
    var follow = function (e, newTab) {
      if (e.defaultPrevented) {
        return;
      }
      var path = typeof e.composedPath === "function" ? e.composedPath() : [e.target];
      for (var i = 0; i < path.length; i++) {
        var a = path[i];
        var tag = a && a.tagName ? String(a.tagName).toLowerCase() : "";
        if ((tag !== "a" && tag !== "area") || !a.hasAttribute("href")) {
          continue;
        }
        if (a.hasAttribute("download")) {
          return;
        }
        var how = newTab ? "tab" : leaves(a.hasAttribute("target") ? a.getAttribute("target") : baseTarget());
        var to = how === "" ? "" : archiveURL(a.href, "");
        if (typeof to === "string" && to.indexOf(origin + "/web/") === 0) {
          e.preventDefault();
          openInArchive(to, how);
        }
        return;
      }
    };
    window.addEventListener("click", function (e) {
      follow(e, e.button === 0 && (e.ctrlKey || e.metaKey || e.shiftKey));
    });
    window.addEventListener("auxclick", function (e) {
      if (e.button === 1) {
        follow(e, true);
      }
    });
    window.addEventListener("submit", function (e) {
      var f = e.target;
      if (e.defaultPrevented || !f || String(f.method).toLowerCase() !== "get") {
        return;
      }
      var s = e.submitter;
      var target = s && s.hasAttribute("formtarget") ? s.getAttribute("formtarget") :
        f.hasAttribute("target") ? f.getAttribute("target") : baseTarget();
      var how = leaves(target);
      if (how === "") {
        return;
      }
      try {
        var u = new URL(archiveURL(s && s.hasAttribute("formaction") ? s.formAction : f.action, ""));
        u.search = new URLSearchParams(new FormData(f, s || null)).toString();
        if (u.origin === origin && webPath.test(u.pathname)) {
          e.preventDefault();
          openInArchive(u.href, how);
        }
      } catch (x) {
        // a form the browser cannot serialize: left to the sandbox
      }
    });
  }

  // archiveAttr returns the value of attribute name of element tag, of
  // the given kind, rewritten; null for an integrity, which is renamed
  // instead (a rewritten resource no longer matches its hash).
  function archiveAttr(kind, v, refresh) {
    switch (kind) {
      case "url":
        return archiveURL(v, "");
      case "frame":
        return archiveURL(v, "if_");
      case "srcset":
        return archiveSrcset(v);
      case "style":
        return archiveCSS(v);
      case "refresh":
        return refresh ? archiveRefresh(v) : v;
      case "integrity":
        return null;
    }
    return v;
  }

  // The URL-valued properties of the elements the table names (img.src,
  // video.poster, a.href, body.background…), patched where the browser
  // defines them (HTMLMediaElement.prototype for video and audio).
  var patched = [];
  table.forEach(function (r) {
    if (r.tag === "*" || (r.kind !== "url" && r.kind !== "frame" && r.kind !== "srcset") || typeof document.createElement !== "function") {
      return;
    }
    var proto = Object.getPrototypeOf(document.createElement(r.tag));
    while (proto && !Object.prototype.hasOwnProperty.call(proto, r.name)) {
      proto = Object.getPrototypeOf(proto);
    }
    if (!proto || (typeof HTMLElement === "function" && proto === HTMLElement.prototype) ||
      patched.some(function (p) { return p[0] === proto && p[1] === r.name; })) {
      return;
    }
    var d = Object.getOwnPropertyDescriptor(proto, r.name);
    if (!d || typeof d.set !== "function" || !d.configurable) {
      return;
    }
    patched.push([proto, r.name]);
    var name = r.name;
    Object.defineProperty(proto, name, {
      configurable: true,
      enumerable: d.enumerable,
      get: d.get,
      set: function (v) {
        var k = attrKind(tagOf(this), name);
        d.set.call(this, k === "url" || k === "frame" || k === "srcset" ? archiveAttr(k, v) : v);
      }
    });
  });

  if (typeof Element === "function") {
    var setAttribute = Element.prototype.setAttribute;
    Element.prototype.setAttribute = function (name, value) {
      var t = tagOf(this);
      var k = attrKind(t, String(name).toLowerCase());
      if (k !== undefined) {
        var refresh = k === "refresh" && /^\s*refresh\s*$/i.test(this.getAttribute("http-equiv") || "");
        var nv = archiveAttr(k, value, refresh);
        if (nv === null) {
          return setAttribute.call(this, "data-herod-integrity", value);
        }
        value = nv;
      }
      return setAttribute.call(this, name, value);
    };
  }
  if (typeof Navigator === "function" && typeof Navigator.prototype.sendBeacon === "function") {
    var beacon = Navigator.prototype.sendBeacon;
    Navigator.prototype.sendBeacon = function (url, data) {
      var args = Array.prototype.slice.call(arguments);
      args[0] = archiveURL(url, "id_");
      return beacon.apply(this, args);
    };
  }

  // Dynamic import(): the server rewrote "import(x" in scripts to
  // "(globalThis.__herodImport||...)(<the script's archived URL>, x", so a
  // relative specifier resolves against the script, as it would live. A
  // bare specifier ("lodash") is left to the page's import map.
  var bare = /^\s*[^.\/\\\s][^:]*$/;
  Object.defineProperty(window, "__herodImport", {
    configurable: false,
    writable: false,
    value: function (base, spec, opts) {
      var s = String(spec);
      var to = bare.test(s) ? s : archiveURL(s, "", base);
      return opts === undefined ? import(to) : import(to, opts);
    }
  });

  ["Worker", "SharedWorker"].forEach(function (name) {
    var W = window[name];
    if (typeof W !== "function") {
      return;
    }
    var wrapped = function (url, opts) {
      if (!(this instanceof wrapped)) {
        return W(url, opts); // throws as the native one does
      }
      var args = Array.prototype.slice.call(arguments);
      args[0] = archiveURL(url, "wk_"); // its location stays the worker's (rewritejs.go)
      return Reflect.construct(W, args, new.target === wrapped ? W : new.target);
    };
    wrapped.prototype = W.prototype;
    Object.setPrototypeOf(wrapped, W);
    window[name] = wrapped;
  });

  // Navigations of this document that no property setter sees
  // (location.href = ..., location.assign/replace, a scripted click on a
  // link a script made): the Navigation API's navigate event reports each
  // before it starts; one that leaves the archive is cancelled and made
  // again to the archived URL. Where the API is missing, the framed page's
  // frame-src (or the content origin's Referer redirect) still keeps the
  // page from reaching the live web.
  if (typeof navigation === "object" && navigation !== null && typeof navigation.addEventListener === "function") {
    navigation.addEventListener("navigate", function (e) {
      if (!e.cancelable || e.hashChange || e.formData || e.downloadRequest || e.navigationType === "traverse" || e.navigationType === "reload") {
        return;
      }
      var to;
      try {
        to = new URL(e.destination.url);
      } catch (x) {
        return;
      }
      if (to.origin === origin && webPath.test(to.pathname)) {
        return; // already in the archive
      }
      if (home !== "" && to.origin === home) {
        return; // the archive's own pages: the frameless banner's links
      }
      var dest = archiveURL(to.origin === origin ? to.pathname + to.search + to.hash : to.href, pageMod === "if_" || pageMod === "fr_" ? pageMod : "");
      if (dest === to.href || typeof dest !== "string" || dest.indexOf(origin + "/web/") !== 0) {
        return;
      }
      e.preventDefault();
      if (e.navigationType === "replace") {
        location.replace(dest);
      } else {
        location.assign(dest);
      }
    });
  }

  // cssSpans returns the [start, end) of each URL in CSS text: the
  // targets of url(…), @import "…" and image-set(…) strings, comments
  // and other strings skipped. It is the server's scanner (webrefs.CSS)
  // step for step; TestReplayJSAgreesWithServer holds the two to the same
  // results.
  function isCSSSpace(c) {
    return c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f";
  }
  function cssString(s, i) { // -> [start, end, next, ok]
    var q = s.charAt(i);
    for (var j = i + 1; j < s.length; j++) {
      var c = s.charAt(j);
      if (c === q) {
        return [i + 1, j, j + 1, true];
      } else if (c === "\\") {
        j++;
      } else if (c === "\n" || c === "\r" || c === "\f") {
        return [0, 0, j, false];
      }
    }
    return [i + 1, s.length, s.length, true];
  }
  function cssURLArg(s, i, spans) { // the inside of url( from i; -> where the scan goes on
    while (i < s.length && isCSSSpace(s.charAt(i))) {
      i++;
    }
    var c = s.charAt(i);
    if (c === "\"" || c === "'") {
      var r = cssString(s, i);
      if (r[3] && r[1] > r[0]) {
        spans.push([r[0], r[1]]);
      }
      var close = s.indexOf(")", r[2]);
      return close >= 0 ? close + 1 : s.length;
    }
    var end = s.indexOf(")", i);
    if (end < 0) {
      end = s.length;
    }
    var e = end;
    while (e > i && isCSSSpace(s.charAt(e - 1))) {
      e--;
    }
    if (e > i && !/[ \t\n\r\f"'(]/.test(s.slice(i, e))) {
      spans.push([i, e]);
    }
    return Math.min(end + 1, s.length);
  }
  function at(s, i, prefix) { // whether prefix starts at s[i], in any case
    return s.substr(i, prefix.length).toLowerCase() === prefix;
  }
  function cssSpans(s) {
    var spans = [];
    var imageSet = 0;
    for (var i = 0; i < s.length;) {
      var c = s.charAt(i);
      if (c === "/" && s.charAt(i + 1) === "*") {
        var end = s.indexOf("*/", i + 2);
        if (end < 0) {
          return spans;
        }
        i = end + 2;
      } else if (c === "\"" || c === "'") {
        var r = cssString(s, i);
        if (r[3] && imageSet > 0 && r[1] > r[0]) {
          spans.push([r[0], r[1]]);
        }
        i = r[2];
      } else if (at(s, i, "url(")) {
        i = cssURLArg(s, i + 4, spans);
      } else if (at(s, i, "@import")) {
        var j = i + 7;
        while (j < s.length && isCSSSpace(s.charAt(j))) {
          j++;
        }
        if (s.charAt(j) === "\"" || s.charAt(j) === "'") {
          var q = cssString(s, j);
          if (q[3] && q[1] > q[0]) {
            spans.push([q[0], q[1]]);
          }
          j = q[2];
        }
        i = j;
      } else if (at(s, i, "image-set(") || at(s, i, "-webkit-image-set(")) {
        imageSet++;
        i = s.indexOf("(", i) + 1;
      } else if (c === "(" && imageSet > 0) {
        imageSet++;
        i++;
      } else if (c === ")" && imageSet > 0) {
        imageSet--;
        i++;
      } else {
        i++;
      }
    }
    return spans;
  }
  function archiveCSS(css) {
    var s = String(css);
    var out = "";
    var last = 0;
    cssSpans(s).forEach(function (sp) {
      out += s.slice(last, sp[0]) + archiveURL(s.slice(sp[0], sp[1]), "");
      last = sp[1];
    });
    return out + s.slice(last);
  }
  // Markup written as text. The attributes the server rewrites are
  // rewritten in each start tag, <style> blocks and style attributes as
  // CSS; every other byte is kept, so partial markup written in pieces
  // (document.write("<scr" + "ipt src=...>")) stays as it was written.
  var styleBlock = /(<style\b[^>]*>)([\s\S]*?)(<\/style|$)/gi;
  var startTag = /<([a-zA-Z][^\s\/>]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
  var attrPair = /([^\s"'>\/=]+)(\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g;
  function unescapeAttr(v) {
    return v.replace(/&(amp|quot|#39|#x27|lt|gt);/gi, function (m, n) {
      return { amp: "&", quot: "\"", "#39": "'", "#x27": "'", lt: "<", gt: ">" }[n.toLowerCase()];
    });
  }
  function escapeAttr(v, q) {
    v = v.replace(/&/g, "&amp;");
    return q === "\"" ? v.replace(/"/g, "&quot;") : q === "'" ? v.replace(/'/g, "&#39;") : v;
  }
  function archiveRefresh(v) {
    return String(v).replace(/(url\s*=\s*["']?)([^"';]+)/i, function (x, pre, u) {
      return pre + archiveURL(u.trim(), "");
    });
  }
  function archiveTag(m, tag, attrs) {
    var t = tag.toLowerCase();
    var refresh = t === "meta" && /http-equiv\s*=\s*["']?\s*refresh/i.test(attrs);
    var na = attrs.replace(attrPair, function (p, name, eq, dq, sq, uq) {
      var k = attrKind(t, name.toLowerCase());
      if (k === undefined) {
        return p;
      }
      var raw = dq !== undefined ? dq : sq !== undefined ? sq : uq;
      var q = dq !== undefined ? "\"" : sq !== undefined ? "'" : "";
      var v = unescapeAttr(raw);
      var nv = archiveAttr(k, v, refresh);
      if (nv === null) {
        return "data-herod-integrity" + p.slice(name.length);
      }
      if (nv === v) {
        return p;
      }
      if (q === "") {
        q = "\"";
      }
      return name + eq + q + escapeAttr(nv, q) + q;
    });
    return na === attrs ? m : "<" + tag + na + ">";
  }
  function archiveMarkup(markup) {
    if (markup === null || markup === undefined || (typeof markup !== "string" && typeof markup !== "object")) {
      return markup;
    }
    var s = String(markup);
    if (s.indexOf("<") < 0) {
      return s;
    }
    s = s.replace(styleBlock, function (m, open, css, close) {
      return open + archiveCSS(css) + close;
    });
    return s.replace(startTag, archiveTag);
  }
  // markupFor rewrites markup set as the content of el: CSS for a <style>.
  function markupFor(el, v) {
    if (el && el.tagName && String(el.tagName).toLowerCase() === "style") {
      return v === null || v === undefined ? v : archiveCSS(v);
    }
    return archiveMarkup(v);
  }

  [[typeof Element === "function" && Element.prototype, ["innerHTML", "outerHTML"]],
    [typeof ShadowRoot === "function" && ShadowRoot.prototype, ["innerHTML"]]].forEach(function (p) {
    var proto = p[0];
    if (!proto) {
      return;
    }
    p[1].forEach(function (name) {
      var d = Object.getOwnPropertyDescriptor(proto, name);
      if (!d || typeof d.set !== "function" || !d.configurable) {
        return;
      }
      Object.defineProperty(proto, name, {
        configurable: true,
        enumerable: d.enumerable,
        get: d.get,
        set: function (v) {
          d.set.call(this, name === "innerHTML" ? markupFor(this, v) : archiveMarkup(v));
        }
      });
    });
  });
  if (typeof Element === "function" && typeof Element.prototype.insertAdjacentHTML === "function") {
    var insertAdjacentHTML = Element.prototype.insertAdjacentHTML;
    Element.prototype.insertAdjacentHTML = function (where, markup) {
      return insertAdjacentHTML.call(this, where, archiveMarkup(markup));
    };
  }
  if (typeof Document === "function") {
    ["write", "writeln"].forEach(function (name) {
      var orig = Document.prototype[name];
      if (typeof orig !== "function") {
        return;
      }
      Document.prototype[name] = function () {
        var args = Array.prototype.map.call(arguments, archiveMarkup);
        return orig.apply(this, args);
      };
    });
  }
})();
