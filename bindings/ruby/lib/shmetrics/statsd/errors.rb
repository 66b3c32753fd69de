# frozen_string_literal: true

module Shmetrics
  module StatsD
    # Base of the facade's errors.
    class Error < StandardError; end

    # A call the store cannot hold and no pass-through agent is set up
    # for: `set`, `event` and `service_check` without `passthrough:`.
    class UnsupportedError < Error; end

    # A value the store refuses: a negative or non-finite increment, a
    # non-numeric gauge or timing.
    class ValueError < ArgumentError; end
  end
end
