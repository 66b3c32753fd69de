# frozen_string_literal: true

module Shmetrics
  module StatsD
    # The statsd-instrument release whose public API the facade follows.
    COMPATIBLE_WITH = "3.11.0"
  end
end
