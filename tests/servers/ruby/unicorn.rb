# frozen_string_literal: true

# Unicorn for tests/servers/ruby/servers_test.rb: 4 workers, preloaded.
worker_processes 4
listen "127.0.0.1:#{ENV.fetch("PORT")}"
pid ENV.fetch("UNICORN_PID")
preload_app true
timeout 30
