# frozen_string_literal: true

require "set"

module Shmetrics
  module StatsD
    module Instrument
      # `capture_statsd_calls` and the prefix helpers of statsd-instrument.
      module Helpers
        def capture_statsd_datagrams(client: nil, &block)
          (client || StatsD.singleton_client).capture(&block)
        end
        alias_method :capture_statsd_calls, :capture_statsd_datagrams

        class << self
          def add_tag(tags, key, value) = Instrument.add_tag(tags, key, value)

          def prefix_metric(name, client: nil)
            prefix = (client || StatsD.singleton_client)&.prefix
            prefix ? "#{prefix}.#{name}" : name
          end

          def prefixed_metric?(name, client: nil)
            prefix = (client || StatsD.singleton_client)&.prefix
            prefix ? name.start_with?("#{prefix}.") : false
          end
        end
      end

      # What one assertion expects: a type, a name (prefixed unless
      # `no_prefix:`), and optionally a value, a sample rate, tags (a
      # subset of the event's) and a number of times.
      class Expectation
        TYPES = { increment: :c, measure: :ms, gauge: :g, set: :s, distribution: :d, histogram: :h }.freeze

        class << self
          TYPES.each do |method, type|
            define_method(method) { |name, value = nil, **options| new(type: type, name: name, value: value, **options) }
          end
        end

        attr_accessor :times, :type, :name, :value, :sample_rate, :tags

        def initialize(type:, name:, client: nil, value: nil, sample_rate: nil, tags: nil, no_prefix: false, times: 1)
          @type = type
          @name = no_prefix ? name : Helpers.prefix_metric(name, client: client)
          @value = value.nil? ? nil : Expectation.normalize(type, value)
          @sample_rate = sample_rate
          @tags = Expectation.tag_list(tags)
          @times = times
        end

        def self.normalize(type, value)
          case type
          when :c then Integer(value)
          when :s then String(value)
          when :g, :h, :d, :ms, :kv then value.is_a?(Array) ? value.map { |v| Float(v) } : Float(value)
          else value
          end
        end

        def self.tag_list(tags)
          list = case tags
          when nil then []
          when Hash then tags.map { |k, v| "#{k}:#{v}" }
          when String then tags.split(",")
          else tags.map(&:to_s)
          end
          list.map { |t| t.match?(/[|,]/) ? t.delete("|,") : t }
        end

        def matches(metric)
          return false if sample_rate && sample_rate != metric.sample_rate
          return false if value && value != Expectation.normalize(metric.type, metric.value)

          Set.new(tags).subset?(Set.new(metric.tags))
        end

        def to_s
          s = +"#{name}:#{value || "<anything>"}|#{type}"
          s << "|@#{sample_rate}" if sample_rate
          s << "|##{tags.join(",")}" unless tags.empty?
          s << " (expected #{times} times)" if times > 1
          s
        end

        def inspect = "#<StatsD::Instrument::Expectation:\"#{self}\">"
      end
      MetricExpectation = Expectation

      # statsd-instrument's Minitest assertions, matched against the
      # events the facade captured (never against bytes).
      module Assertions
        include Helpers

        def assert_no_statsd_calls(*names, datagrams: nil, client: nil, no_prefix: false, &block)
          client ||= StatsD.singleton_client
          datagrams ||= statsd_capture_for_assertion(client, __method__, &block)
          unless no_prefix
            names = names.map do |n|
              if Helpers.prefixed_metric?(n, client: client)
                warn("`assert_no_statsd_calls` will prefix metrics by default. `#{n}` skipped due to existing prefix.")
                n
              else
                Helpers.prefix_metric(n, client: client)
              end
            end
          end
          datagrams = datagrams.select { |m| names.include?(m.name) } unless names.empty?
          assert(datagrams.empty?, "No StatsD calls for metric #{datagrams.map(&:name).join(", ")} expected.")
        end

        Expectation::TYPES.each do |method, _type|
          define_method(:"assert_statsd_#{method}") do |name, value = nil, datagrams: nil, client: nil, **options, &block|
            expectation = Expectation.public_send(method, name, value, client: client, **options)
            assert_statsd_expectations(expectation, datagrams: datagrams, client: client, &block)
          end
        end

        def assert_statsd_expectations(expectations, datagrams: nil, client: nil, &block)
          datagrams ||= statsd_capture_for_assertion(client, __method__, &block)
          datagrams = datagrams.dup
          expectations = Array(expectations)
          expectations.each do |e|
            same = datagrams.select { |m| m.type == e.type && m.name == e.name }
            if same.empty?
              next if e.times == 0

              flunk("No StatsD calls for metric #{e.name} of type #{e.type} were made.")
            end
            left = e.times
            same.each do |m|
              next unless e.matches(m)

              flunk("Unexpected StatsD call; number of times this metric was expected exceeded: #{e.inspect}") if left == 0
              left -= 1
              datagrams.delete_at(datagrams.index { |d| d.equal?(m) })
            end
            next if left == 0

            msg = +"Metric expected #{e.times} times but seen #{e.times - left} times: #{e.inspect}."
            msg << "\nCaptured metrics with the same key: #{same}" unless same.empty?
            flunk(msg)
          end
          pass
        end
        alias_method :assert_statsd_calls, :assert_statsd_expectations
        alias_method :assert_statsd_expectation, :assert_statsd_expectations

        private

        def statsd_capture_for_assertion(client, method, &block)
          raise LocalJumpError, "#{method} requires a block" unless block

          begin
            capture_statsd_datagrams(client: client, &block)
          rescue StandardError => e
            flunk(<<~MESSAGE)
              An exception occurred in the block provided to the StatsD assertion.
              #{e.class}: #{e.message}
              \t#{(e.backtrace || []).join("\n\t")}
              If this exception is expected, make sure to handle it using `assert_raises`
              inside the block provided to the StatsD assertion.
            MESSAGE
          end
        end
      end
    end
  end
end
