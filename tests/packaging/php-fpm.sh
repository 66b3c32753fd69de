#!/usr/bin/env bash
# Part of the packaging test (tests/packaging/run.sh), with the shmetrics
# and php-shmetrics .debs installed: Debian's php-fpm with its own php.ini
# and conf.d (where the package enabled the extension) behind nginx, four
# workers recycled every 50 requests, serving an app that takes the PHP
# package from the system's include_path. It sends COUNT requests; every
# answer must come from the extension (not FFI), and `shmetrics dump`
# must count them all.
#   tests/packaging/php-fpm.sh DIR COUNT
set -euo pipefail
dir=$1
count=$2
mkdir -p "$dir/nginx"
store=$dir/fpm.metrics
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fpm_port=$(free_port)
nginx_port=$(free_port)
fpm_bin=$(ls /usr/sbin/php-fpm* | head -n1)

cat >"$dir/app.php" <<PHP
<?php
require 'Shmetrics/autoload.php';
\$registry = new Shmetrics\CollectorRegistry(new Shmetrics\Storage\Shmetrics('$store'));
\$registry->getOrRegisterCounter('pkg', 'requests', 'Requests.', ['route'])->inc([\$_SERVER['DOCUMENT_URI']]);
echo Shmetrics\Native::extension() ? 'ext' : 'ffi', ' ', getmypid(), "\n";
PHP
cat >"$dir/fpm.conf" <<CONF
[global]
error_log = $dir/fpm.log
daemonize = no
[app]
user = root
listen = 127.0.0.1:$fpm_port
pm = static
pm.max_children = 4
pm.max_requests = 50
catch_workers_output = yes
CONF
cat >"$dir/nginx/nginx.conf" <<CONF
user root;
worker_processes 1;
error_log $dir/nginx/error.log;
pid $dir/nginx/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $dir/nginx/body;
    fastcgi_temp_path $dir/nginx/fastcgi;
    proxy_temp_path $dir/nginx/proxy;
    uwsgi_temp_path $dir/nginx/uwsgi;
    scgi_temp_path $dir/nginx/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        location / {
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $dir/app.php;
            fastcgi_pass 127.0.0.1:$fpm_port;
        }
    }
}
CONF
pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT
# No -c: php-fpm reads Debian's /etc/php/*/fpm/php.ini and conf.d.
"$fpm_bin" --nodaemonize --allow-to-run-as-root -y "$dir/fpm.conf" >"$dir/fpm.out" 2>&1 &
pids+=($!)
/usr/sbin/nginx -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -g 'daemon off;' >"$dir/nginx.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$nginx_port/warmup" >/dev/null && break
  sleep 0.1
done
rm -f "$dir/answers"
for i in $(seq "$count"); do
  curl -sf "http://127.0.0.1:$nginx_port/r$((i % 3))" >>"$dir/answers" ||
    { cat "$dir/fpm.log" >&2; echo "php-fpm.sh: request $i failed" >&2; exit 1; }
done
modes=$(cut -d' ' -f1 "$dir/answers" | sort | uniq -c | tr -s ' ')
workers=$(cut -d' ' -f2 "$dir/answers" | sort -u | wc -l)
[ "$modes" = " $count ext" ] || { echo "php-fpm.sh: answers by mode:$modes (want $count ext)" >&2; exit 1; }
[ "$workers" -ge 4 ] || { echo "php-fpm.sh: only $workers workers answered" >&2; exit 1; }
total=$(shmetrics dump --store "$store" | awk '/^pkg_requests(_total)?\{route="\/r[012]"\} / { n += $2 } END { print n + 0 }')
[ "$total" = "$count" ] || { shmetrics dump --store "$store" >&2; echo "php-fpm.sh: the store counts $total of $count" >&2; exit 1; }
echo "php-fpm.sh: $count requests, all through the extension, from $workers workers; the store counts $total"
