package spaweb

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
)

// hostile answers the pages of Site.HostileURL and what they load.
func (s *Site) hostile(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	page := func(body string) {
		h.Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><meta charset=utf-8><title>hostile</title></head><body>%s</body></html>", body)
	}
	switch r.URL.Path {
	case "/hostile/loop.html":
		// Renders a little, then keeps the page's only thread busy.
		page(`<p>looping</p><img src="/img/loop.png"><script>setTimeout(function(){for(;;){}}, 50);</script>`)
	case "/hostile/endless.html":
		page(`<ul id=feed></ul><div id=more style="height:10px">more</div><script>
let next = "/hostile/endless.json?page=0", busy = false;
new IntersectionObserver(function(es){
  if (!es.some(function(e){return e.isIntersecting}) || busy) return;
  busy = true;
  fetch(next).then(function(r){return r.json()}).then(function(p){
    for (const it of p.items) {
      const li = document.createElement("li");
      li.style.height = "200px";
      const img = document.createElement("img");
      img.src = it.image;
      li.appendChild(img);
      document.getElementById("feed").appendChild(li);
    }
    next = p.next; busy = false;
  });
}).observe(document.getElementById("more"));
</script>`)
	case "/hostile/memory.html":
		// Holds ever more memory, 8 MB more every 20 ms, never freed, and
		// keeps the network busy so the page never settles.
		page(`<p>hoarding</p><script>var hoard = [], n = 0;
setInterval(function(){ hoard.push(new Float64Array(1 << 20).fill(hoard.length)); }, 20);
setInterval(function(){ fetch(location.pathname + "?" + (n++)).catch(function(){}); }, 100);</script>`)
	case "/hostile/download.html":
		page(`<a id=dl href="/hostile/file.bin" download="file.bin">file</a><script>
document.getElementById("dl").click();
setTimeout(function(){ location.href = "/hostile/file.bin?nav=1"; }, 100);
</script>`)
	case "/hostile/file.bin":
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", `attachment; filename="file.bin"`)
		_, _ = w.Write(make([]byte, 64<<10))
	case "/hostile/flood.html":
		to := r.URL.Query().Get("to")
		page(fmt.Sprintf(`<p>flood</p><script>for (let i = 0; i < 1000; i++) fetch(%s + "?" + i).catch(function(){});</script>`, strconv.Quote(to)))
	case "/hostile/internal.html":
		to := r.URL.Query().Get("to")
		u, err := url.Parse(to)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			http.Error(w, "to: an http(s) URL", http.StatusBadRequest)
			return
		}
		ws := *u
		ws.Scheme = "ws"
		q := strconv.Quote(to)
		page(fmt.Sprintf(`<img src="%[1]s"><script src="%[1]s"></script><iframe src="%[1]s"></iframe>
<link rel=stylesheet href="%[1]s"><script>
fetch(%[2]s).catch(function(){});
try { new WebSocket(%[3]s); } catch (e) {}
try { new Worker(URL.createObjectURL(new Blob(["fetch(" + JSON.stringify(%[2]s) + ").catch(function(){})"], {type: "text/javascript"}))); } catch (e) {}
</script>`, html.EscapeString(to), q, strconv.Quote(ws.String())))
	default:
		http.NotFound(w, r)
	}
}
