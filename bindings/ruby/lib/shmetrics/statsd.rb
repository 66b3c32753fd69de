# frozen_string_literal: true

# A StatsD facade with statsd-instrument's API whose events land in a
# shmetrics store instead of a socket. Every worker of a host adds into the
# same shared memory; the host's one exporter (`shmetrics serve
# --statsd.address ...`) sends what the whole host aggregated, once per
# interval. See docs/ruby.md, section "statsd-instrument".
#
#   require "shmetrics/statsd"
#   Shmetrics::StatsD.configure(store: "/dev/shm/app.shm", prefix: "app")
#   Shmetrics::StatsD.increment("requests", tags: { route: "/" })
#
# `require "shmetrics/statsd/compat"` also names it `::StatsD`, so code
# written for statsd-instrument runs unchanged.

require "logger"
require "shmetrics"

require_relative "statsd/version"
require_relative "statsd/errors"
require_relative "statsd/metric"
require_relative "statsd/sinks"
require_relative "statsd/series_cache"
require_relative "statsd/store_sink"
require_relative "statsd/passthrough"
require_relative "statsd/environment"
require_relative "statsd/client"
require_relative "statsd/instrument"
require_relative "statsd/assertions"

module Shmetrics
  module StatsD
    class << self
      attr_writer :logger, :singleton_client

      # Where warnings go (statsd-instrument's `StatsD.logger`).
      def logger
        @logger ||= Logger.new($stderr, progname: "shmetrics-statsd")
      end

      # The client behind `StatsD.increment` and the other module methods.
      # Made on first use from `configure`'s options, or else from the
      # environment (`Client.from_env`).
      def singleton_client
        @singleton_client ||= Instrument::Client.from_env
      end

      # Sets up the singleton client: `store:` (a path or a
      # `Shmetrics::Store`), `prefix:`, `default_tags:`,
      # `default_sample_rate:`, `buckets:` (the bounds of timers,
      # histograms and distributions), `ttl:` (seconds after which a
      # series no process updated is forgotten), `passthrough:` (an agent
      # address for `set`, `event` and `service_check`).
      def configure(**options)
        @singleton_client = Instrument::Client.new(**options)
      end

      def increment(...) = singleton_client.increment(...)
      def measure(...) = singleton_client.measure(...)
      def gauge(...) = singleton_client.gauge(...)
      def set(...) = singleton_client.set(...)
      def histogram(...) = singleton_client.histogram(...)
      def distribution(...) = singleton_client.distribution(...)
      def event(...) = singleton_client.event(...)
      def service_check(...) = singleton_client.service_check(...)
    end
  end
end
