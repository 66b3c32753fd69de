# frozen_string_literal: true

require "shmetrics"

module Shmetrics
  # Rack middleware.
  module Rack
    # Checks, at most once per `interval` seconds and between requests,
    # whether a store's file was replaced (removed and created again, by a
    # deploy script or by `rm` and a restarted exporter), and reopens it
    # (Store#check): a long-lived worker's updates then land in the file
    # the exporter serves. Checks `stores`, or every store the process
    # opened.
    #
    #   use Shmetrics::Rack::CheckStore, interval: 1
    class CheckStore
      def initialize(app, interval: 1.0, stores: nil)
        @app = app
        @interval_ns = (interval * 1e9).to_i
        @stores = stores
        @next = 0
      end

      def call(env)
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        if now >= @next
          @next = now + @interval_ns
          @stores ? @stores.each(&:check) : Shmetrics.check_store
        end
        @app.call(env)
      end
    end
  end
end
