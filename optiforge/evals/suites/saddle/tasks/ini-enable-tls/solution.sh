# Reference solution of ini-enable-tls: one shell command a line, run from the work dir.
cat app.ini
python3 -c 'import configparser; c = configparser.ConfigParser(interpolation=None); c.read("app.ini"); c["server"]["port"] = "8443"; c["server"]["workers"] = "8"; c["logging"]["level"] = "warning"; c["tls"] = {"cert": "/etc/shop/tls/server.crt", "key": "/etc/shop/tls/server.key"}; c.write(open("app.ini", "w"))'
cat app.ini
