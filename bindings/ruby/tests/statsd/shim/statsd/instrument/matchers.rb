# frozen_string_literal: true

# statsd-instrument's matchers_test.rb requires the gem's matchers by
# path; the facade's are loaded instead.
require "shmetrics/statsd/matchers"
