onconnect = function (e) { var p = e.ports[0]; p.onmessage = function (m) { p.postMessage("S:" + m.data); }; };
