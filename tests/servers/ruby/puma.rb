# frozen_string_literal: true

# Puma cluster for tests/servers/ruby/servers_test.rb: 4 workers, with
# preload_app! unless PUMA_PHASED=1 (Puma refuses a phased restart of a
# preloaded app).
workers 4
threads 2, 2
bind "tcp://127.0.0.1:#{ENV.fetch("PORT")}"
state_path ENV.fetch("PUMA_STATE")
pidfile ENV.fetch("PUMA_PID")
preload_app! unless ENV["PUMA_PHASED"] == "1"
worker_timeout 30
