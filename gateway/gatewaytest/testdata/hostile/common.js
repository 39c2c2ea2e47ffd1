// common.js: what every hostile page uses. LIVE is replaced by the live
// host's URL when the hostile site serves it.
var live = "LIVE";
// The gateway's UI origin, as an attacker finds it: the frame's ancestor.
var ui = location.ancestorOrigins && location.ancestorOrigins.length ?
  location.ancestorOrigins[location.ancestorOrigins.length - 1] : "";
var here = /^\/web\/([0-9]+)[a-z_]*\/(.*)$/.exec(location.pathname);
var ts = here ? here[1] : "";
var archived = here ? here[2] : location.href;
// report records an outcome where the test can see it: a request to the
// archive (the content origin) for this site's /report path.
function report(name, result) {
  var i = new Image();
  i.src = "/report?a=" + encodeURIComponent(name) + "&r=" + encodeURIComponent(String(result).slice(0, 120));
}
// fresh returns a new same-origin realm, whose fetch, Image and
// ServiceWorkerContainer the replay script did not touch.
function fresh() {
  var f = document.createElement("iframe");
  f.style.display = "none";
  document.body.appendChild(f);
  return f.contentWindow;
}
