#!/usr/bin/env bash
# Start/stop a single-node Apache Kafka 4.x broker (KRaft, combined broker+controller) on 127.0.0.1
# for ALTM's integration tests. The broker jars are resolved from Maven Central by scripts/kafka/pom.xml
# and cached under $ALTM_KAFKA_HOME/jars (default .cache/kafka) after the first run.
#
#   scripts/kafka.sh start    # resolve jars if needed, format storage, start, wait until ready
#   scripts/kafka.sh resume   # start again keeping the data of the last run (e.g. after `stop`)
#   scripts/kafka.sh stop     # stop the broker started by this script
#   scripts/kafka.sh status   # exit 0 when the broker answers on its port
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
home="${ALTM_KAFKA_HOME:-$root/.cache/kafka}"
port="${ALTM_KAFKA_PORT:-19092}"
cport="${ALTM_KAFKA_CONTROLLER_PORT:-19093}"
jars="$home/jars"
run="${ALTM_KAFKA_RUN:-$home/run}"  # a second broker (tests) may use its own run dir
pidfile="$run/kafka.pid"
cp="$jars/*"
jopts=(-Xms256m -Xmx768m -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$run/logs")

resolve_jars() {
  if [ -f "$jars/.complete" ]; then return; fi
  echo "kafka.sh: resolving Apache Kafka broker jars from Maven Central into $jars" >&2
  rm -rf "$jars"; mkdir -p "$jars"
  mvn -q -B -f "$here/kafka/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$jars" -DincludeScope=runtime >&2
  touch "$jars/.complete"
}

is_up() {
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

start() {
  resolve_jars
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "kafka.sh: broker already running (pid $(cat "$pidfile")) on 127.0.0.1:$port" >&2; return
  fi
  local keep="${1:-}"
  if [ "$keep" = "keep" ] && [ -f "$run/server.properties" ]; then
    launch; return
  fi
  rm -rf "$run"; mkdir -p "$run/data" "$run/logs"
  cat > "$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$run/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
  java "${jopts[@]}" -cp "$cp" kafka.tools.StorageTool format \
      -t "$(java -cp "$cp" kafka.tools.StorageTool random-uuid)" -c "$run/server.properties" >"$run/logs/format.log" 2>&1
  launch
}

launch() {
  nohup java "${jopts[@]}" -cp "$cp" kafka.Kafka "$run/server.properties" >"$run/logs/stdout.log" 2>&1 &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if is_up; then echo "kafka.sh: broker up on 127.0.0.1:$port (pid $(cat "$pidfile"))" >&2; return; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "kafka.sh: broker exited during start; see $run/logs" >&2; tail -n 30 "$run/logs/stdout.log" >&2; exit 1
    fi
    sleep 0.5
  done
  echo "kafka.sh: broker did not open 127.0.0.1:$port within 60s" >&2; exit 1
}

stop() {
  if [ -f "$pidfile" ]; then
    local pid; pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  fi
}

case "${1:-}" in
  start) start ;;
  resume) start keep ;;
  stop) stop ;;
  status) is_up ;;
  *) echo "usage: $0 start|resume|stop|status" >&2; exit 2 ;;
esac
