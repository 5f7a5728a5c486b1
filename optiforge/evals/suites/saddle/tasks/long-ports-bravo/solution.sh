# Reference solution of long-ports-bravo: one shell command a line, run from the work dir.
cat inventory.txt
ls deploy
cat deploy/api.env
cat gateway.tmpl
sed -i 's/^PORT=0$/PORT=7001/' deploy/api.env
sed -i 's/^PORT=0$/PORT=7080/' deploy/web.env
sed -i 's/^PORT=0$/PORT=7443/' deploy/auth.env
sed -i 's/^PORT=0$/PORT=7999/' deploy/metrics.env
python3 render_bravo.py
cat gateway.conf
python3 check_bravo.py > check.txt
cat check.txt
