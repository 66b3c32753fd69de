# frozen_string_literal: true

# Our stand-in for statsd-instrument's test/test_helper.rb: its test files
# `require "test_helper"` and get the facade (through
# `shmetrics/statsd/compat`) in place of the gem. Nothing is copied from
# the gem: only the few names its tests expect of their helper.

ENV["ENV"] = "test"
require "minitest/autorun"
require "logger"
begin
  require "mocha/minitest"
rescue LoadError
  # Debian's ruby-mocha; scripts/ruby-statsd-tests.sh installs it. Without
  # it the tests that stub `Process.clock_gettime` fail (and are reported).
end
require "shmetrics/statsd/compat"

module StatsD
  module Instrument
    # The gem's helper answers whether `StatsD::Instrument::Strict` is
    # mixed in; the facade has no strict mode.
    def self.strict_mode_enabled? = false
  end
end

module Minitest
  class Test
    def skip_on_jruby(message = "JRuby only") = (skip(message) if RUBY_ENGINE == "jruby")
  end
end

StatsD.logger = Logger.new(File::NULL)
Thread.abort_on_exception = true
