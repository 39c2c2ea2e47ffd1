document.getElementById("write") && 0; window.written = "W";
