onmessage = function (e) { postMessage("W:" + e.data); };
