self.addEventListener("fetch", function (e) { e.respondWith(new Response("owned by an archived service worker")); });
