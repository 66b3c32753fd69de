# frozen_string_literal: true

require "rspec/expectations"
require_relative "../statsd"

module Shmetrics
  module StatsD
    module Instrument
      # statsd-instrument's RSpec matchers: `expect { ... }.to
      # trigger_statsd_increment("name", times: 2, tags: [...])`, matched
      # against the events the facade captured. `require
      # "shmetrics/statsd/matchers"` in spec_helper and `include
      # StatsD::Instrument::Matchers`.
      module Matchers
        # One matcher: a type, a name and options (`times`, `sample_rate`,
        # `value`, `tags`; each may be an RSpec argument matcher).
        class Matcher
          include RSpec::Matchers::Composable
          include Helpers

          def initialize(type, name, options = {})
            @type = type
            @name = name
            @options = options
          end

          def matches?(block)
            check(capture_statsd_calls(&block))
          rescue RSpec::Expectations::ExpectationNotMetError => e
            @message = e.message
            false
          end

          def failure_message = @message

          def failure_message_when_negated = "No StatsD calls for metric #{@name} expected."

          def supports_block_expectations? = true

          def description = "trigger a statsd call for metric #{@name}"

          private

          def fail_with(message)
            raise RSpec::Expectations::ExpectationNotMetError, message
          end

          def match?(expected, actual) = RSpec::Matchers::BuiltIn::Match.new(expected).matches?(actual)

          def check(metrics)
            want_tags = @options[:tags]
            metrics = metrics.select do |m|
              m.type == @type && m.name == @name && (want_tags.nil? || match?(want_tags, m.tags || []))
            end
            times = @options[:times]
            fail_with("No StatsD calls for metric #{@name} were made.") if metrics.empty?
            if times && times != metrics.size
              fail_with("The numbers of StatsD calls for metric #{@name} was unexpected. " \
                "Expected #{times.inspect}, got #{metrics.size}")
            end
            %i[sample_rate value tags].each do |what|
              next unless @options[what]

              n = metrics.count { |m| match?(@options[what], m.public_send(what)) }
              next if times ? n == times : n > 0

              fail_with("expected StatsD #{what.inspect} for metric '#{@name}' to be called\n  " \
                "#{times ? "exactly #{times} times" : "at least once"} with: #{@options[what]}\n  " \
                "captured metric values: #{metrics.map(&what).join(", ")}")
            end
            true
          end
        end

        { increment: :c, measure: :ms, gauge: :g, set: :s, histogram: :h, distribution: :d }.each do |method, type|
          klass = Class.new(Matcher)
          const_set(method.to_s.capitalize, klass)
          define_method(:"trigger_statsd_#{method}") { |name, options = {}| klass.new(type, name, options) }
        end
      end
    end
  end
end
