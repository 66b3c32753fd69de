# frozen_string_literal: true

# Puma for benches/ruby/puma_rps.rb: cluster mode, WORKERS workers (4),
# preload_app!, two threads each.
workers Integer(ENV.fetch("WORKERS", 4))
threads 2, 2
bind "tcp://127.0.0.1:#{ENV.fetch("PORT")}"
pidfile ENV.fetch("PUMA_PID")
preload_app!
quiet
