// spaweb: a single-page app whose content, links, images and font all
// come from this script.
"use strict";

const view = document.getElementById("view");
const nav = document.getElementById("nav");

// The web font, loaded by script.
const font = new FontFace("Spa", "url(/static/spa.ttf?v=3)");
font.load().then((f) => document.fonts.add(f), () => {});

// Links written by the script, from JSON.
fetch("/api/nav.json").then((r) => r.json()).then((items) => {
  for (const it of items) {
    const a = document.createElement("a");
    a.href = it.href;
    a.textContent = it.title;
    nav.appendChild(a);
  }
});

// Client-side routing: links to /app/ are followed with pushState.
document.addEventListener("click", (e) => {
  const a = e.target.closest("a");
  if (a && a.pathname.startsWith("/app/")) {
    e.preventDefault();
    history.pushState({}, "", a.pathname);
    render();
  }
});
window.addEventListener("popstate", render);

function render() {
  const name = location.pathname.replace(/^\/app\//, "") || "home";
  fetch("/api/page/" + encodeURIComponent(name) + ".json")
    .then((r) => r.json())
    .then((p) => {
      view.innerHTML = "";
      const h = document.createElement("h1");
      h.textContent = p.title;
      view.appendChild(h);
      const t = document.createElement("p");
      t.textContent = p.text;
      view.appendChild(t);
      const img = document.createElement("img");
      img.src = p.image;
      img.alt = p.title;
      view.appendChild(img);
    });
}

if (location.pathname === "/" || location.pathname === "") {
  history.pushState({}, "", "/app/home");
}
render();

// Lazy images: some with loading=lazy, some set by an IntersectionObserver.
const gallery = document.getElementById("gallery");
const io = new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (e.isIntersecting) {
      e.target.src = e.target.dataset.src;
      io.unobserve(e.target);
    }
  }
});
for (let i = 0; i < 6; i++) {
  const img = document.createElement("img");
  img.alt = "gallery " + i;
  if (i % 2 === 0) {
    img.loading = "lazy";
    img.src = "/img/lazy-" + i + ".png";
  } else {
    img.dataset.src = "/img/observed-" + i + ".png";
    io.observe(img);
  }
  gallery.appendChild(img);
}

// Infinite scroll: the next page of the feed when its end is in view.
const feed = document.getElementById("feed");
const more = document.getElementById("more");
let next = "/api/feed?page=0";
let loading = false;
const moreIO = new IntersectionObserver((entries) => {
  if (!entries.some((e) => e.isIntersecting) || loading || !next) return;
  loading = true;
  fetch(next).then((r) => r.json()).then((p) => {
    for (const it of p.items) {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = it.href;
      a.textContent = it.title;
      const img = document.createElement("img");
      img.src = it.image;
      img.alt = it.title;
      li.appendChild(a);
      li.appendChild(img);
      feed.appendChild(li);
    }
    next = p.next;
    if (!next) more.textContent = "the end";
    loading = false;
  });
});
moreIO.observe(more);
