# frozen_string_literal: true

module Shmetrics
  module StatsD
    # One event as the facade saw it: what `capture` returns, and what the
    # assertions match. It has the readers of statsd-instrument's
    # `Datagram` (`name`, `value`, `type`, `sample_rate`, `tags`) but no
    # bytes: the facade never writes a datagram per event.
    class Metric
      attr_reader :type, :name, :value, :sample_rate, :tags

      def initialize(type, name, value, sample_rate, tags)
        @type = type
        @name = name
        @value = value
        @sample_rate = sample_rate
        @tags = tags
      end

      # The line statsd-instrument would have sent, for messages only.
      def to_s
        s = +"#{name}:#{value}|#{type}"
        s << "|@#{sample_rate}" if sample_rate < 1
        s << "|##{tags.join(",")}" if tags
        s
      end

      def inspect
        "#<#{self.class.name}:#{self}>"
      end

      def ==(other)
        other.is_a?(Metric) && other.to_s == to_s
      end
      alias_method :eql?, :==

      def hash
        to_s.hash
      end
    end
  end
end
