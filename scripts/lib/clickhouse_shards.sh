# shellcheck shell=bash
# ClickHouse shards for the cluster benchmarks: Debian's clickhouse-server (18.16 here) on a
# temp dir, loopback only, default settings. Source it; the caller owns `pids` (an array of
# processes its cleanup kills) and CH (the server binary).

shard() { # dir http_port tcp_port
  local d=$1
  mkdir -p "$d"
  cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex><profiles><default></default></profiles><users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users><quotas><default></default></quotas></yandex>
EOF
  cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<yandex><logger><level>warning</level><log>$d/server.log</log><errorlog>$d/error.log</errorlog></logger>
<http_port>$2</http_port><tcp_port>$3</tcp_port><listen_host>127.0.0.1</listen_host>
<path>$d/data/</path><tmp_path>$d/tmp/</tmp_path><user_files_path>$d/uf/</user_files_path><format_schema_path>$d/fs/</format_schema_path>
<mark_cache_size>268435456</mark_cache_size><users_config>$d/users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database></yandex>
EOF
  "$CH" --config-file="$d/config.xml" >/dev/null 2>&1 &
  pids+=($!)
}

wait_http() { # url
  for _ in $(seq 600); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done
  echo "no answer from $1" >&2
  exit 1
}
