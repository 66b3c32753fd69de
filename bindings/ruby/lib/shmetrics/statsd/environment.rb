# frozen_string_literal: true

module Shmetrics
  module StatsD
    module Instrument
      # The environment a client is made from (statsd-instrument's
      # `StatsD::Instrument::Environment`): a hash of variables, `ENV` by
      # default. See `Client.from_env` for the variables read.
      class Environment
        def self.current = new(ENV)

        def initialize(env)
          @env = env.to_h
        end

        def [](name) = @env[name]

        def to_h = @env.dup

        def environment
          @env["STATSD_ENV"] || @env["RAILS_ENV"] || @env["RACK_ENV"] || @env["ENV"] || "development"
        end

        def client = Client.from_env(self)
      end
    end
  end
end
