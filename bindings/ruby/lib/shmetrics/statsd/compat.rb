# frozen_string_literal: true

# Names the facade `::StatsD`, for code written against statsd-instrument:
# `require "shmetrics/statsd/compat"` in place of `require
# "statsd-instrument"`. The constant is only defined on this opt-in, so a
# plain `require "shmetrics/statsd"` never collides with an application's
# own `StatsD`.

require_relative "../statsd"

if defined?(::StatsD) && !::StatsD.equal?(Shmetrics::StatsD)
  raise Shmetrics::StatsD::Error,
    "::StatsD is already defined (is statsd-instrument loaded too?); " \
    "drop `require \"statsd-instrument\"` or use Shmetrics::StatsD by its full name"
end

StatsD = Shmetrics::StatsD
