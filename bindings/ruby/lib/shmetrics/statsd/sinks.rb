# frozen_string_literal: true

module Shmetrics
  module StatsD
    # Drops every event. The default when no store is set up, as
    # statsd-instrument's own default outside production.
    class NullSink
      def emit(_client, _type, _name, _value, _sample_rate, _tags, _no_prefix); end

      def sample?(_rate) = true

      def flush(blocking: false); end
    end

    # Records every event as a `Metric`, then hands it on to its parent
    # (the store), as statsd-instrument's `CaptureSink` does.
    class CaptureSink
      attr_reader :parent, :metrics

      def initialize(parent:)
        @parent = parent
        @metrics = []
      end

      # statsd-instrument names them datagrams.
      alias_method :datagrams, :metrics

      def emit(client, type, name, value, sample_rate, tags, no_prefix)
        @metrics << Metric.new(
          type,
          client.metric_name(name, no_prefix),
          value,
          Float(sample_rate || client.default_sample_rate),
          client.metric_tags(tags),
        )
        @parent.emit(client, type, name, value, sample_rate, tags, no_prefix)
      end

      def sample?(_rate) = true

      def clear = @metrics.clear

      def flush(blocking: false) = @parent.flush(blocking: blocking)
    end
  end
end
