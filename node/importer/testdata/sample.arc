filedesc://sample.arc 0.0.0.0 20050614070144 text/plain 75
1 0 Alexa Internet
URL IP-address Archive-date Content-type Archive-length

http://arc.example/ 192.0.2.1 20050614070159 text/html 87
HTTP/1.0 200 OK
Content-Type: text/html
Content-Length: 23

<p>an ARC from 2005</p>
http://arc.example/logo.txt 192.0.2.1 20050614070201 text/plain 77
HTTP/1.0 200 OK
Content-Type: text/plain
Content-Length: 12

logo in 2005
dns:arc.example 192.0.2.2 20050614070140 text/dns 48
20050614070140
arc.example. 3600 IN A 192.0.2.1

