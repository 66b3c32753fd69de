# frozen_string_literal: true

module Shmetrics
  module StatsD
    # statsd-instrument's class helpers: `extend StatsD::Instrument` in a
    # class, then `statsd_count :method, "metric.name"` and the others
    # wrap the method (through a prepended module, so `super` reaches the
    # method itself and its visibility is kept). `name` and `tags` may be
    # procs called with the object and the method's arguments.
    module Instrument
      # What the event methods return (statsd-instrument's `VOID`).
      VOID = Object.new.freeze

      class << self
        # Seconds the block took.
        def duration
          start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          yield
          Process.clock_gettime(Process::CLOCK_MONOTONIC) - start
        end

        def current_timestamp
          Process.clock_gettime(Process::CLOCK_MONOTONIC)
        end

        # The metric name for a call: a proc's result or the string, with
        # `::` made `.`.
        def generate_metric_name(name, callee, *args)
          (name.respond_to?(:call) ? name.call(callee, args) : name).to_s.gsub("::", ".")
        end

        def generate_tags(tags, callee, *args)
          tags.respond_to?(:call) ? tags.call(callee, args) : tags
        end

        def extended(base)
          base.statsd_instrumentations
        end
      end

      # The modules this class prepended, by [method, name, action].
      def statsd_instrumentations
        return @statsd_instrumentations if defined?(@statsd_instrumentations)
        return superclass.statsd_instrumentations if respond_to?(:superclass) &&
          superclass.respond_to?(:statsd_instrumentations)

        @statsd_instrumentations = {}
      end

      # Counts every call.
      def statsd_count(method, name, sample_rate: nil, tags: nil, no_prefix: false, client: nil)
        statsd_wrap(method, name, :count) do |object, args, call|
          c = client || StatsD.singleton_client
          c.increment(Instrument.generate_metric_name(name, object, *args), sample_rate: sample_rate,
            tags: Instrument.generate_tags(tags, object, *args), no_prefix: no_prefix)
          call.call
        end
      end

      # Times every call (`measure`, milliseconds).
      def statsd_measure(method, name, sample_rate: nil, tags: nil, no_prefix: false, client: nil)
        statsd_timed(:measure, method, name, sample_rate, tags, no_prefix, client)
      end

      # Times every call as a distribution.
      def statsd_distribution(method, name, sample_rate: nil, tags: nil, no_prefix: false, client: nil)
        statsd_timed(:distribution, method, name, sample_rate, tags, no_prefix, client)
      end

      # Counts `name.success` or `name.failure`: failure when the method
      # raises or returns false, or when the block (given the result)
      # returns false or raises.
      def statsd_count_success(method, name, sample_rate: nil, tags: nil, no_prefix: false,
        client: nil, tag_error_class: false, &judge)
        statsd_wrap(method, name, :count_success) do |object, args, call|
          truth, result, error = Instrument.send(:judged_call, call, judge)
          key = Instrument.generate_metric_name(name, object, *args)
          t = Instrument.generate_tags(tags, object, *args)
          t = Instrument.add_tag(t, :error_class, error.class.name) if tag_error_class && error
          (client || StatsD.singleton_client).increment("#{key}.#{truth == false ? "failure" : "success"}",
            sample_rate: sample_rate, tags: t, no_prefix: no_prefix)
          raise error if error

          result
        end
      end

      # Counts the calls that succeed (as `statsd_count_success` judges).
      def statsd_count_if(method, name, sample_rate: nil, tags: nil, no_prefix: false, client: nil, &judge)
        statsd_wrap(method, name, :count_if) do |object, args, call|
          truth, result, error = Instrument.send(:judged_call, call, judge)
          if truth
            (client || StatsD.singleton_client).increment(Instrument.generate_metric_name(name, object, *args),
              sample_rate: sample_rate, tags: Instrument.generate_tags(tags, object, *args), no_prefix: no_prefix)
          end
          raise error if error

          result
        end
      end

      def statsd_remove_count(method, name) = statsd_unwrap(method, name, :count)
      def statsd_remove_count_if(method, name) = statsd_unwrap(method, name, :count_if)
      def statsd_remove_count_success(method, name) = statsd_unwrap(method, name, :count_success)
      def statsd_remove_measure(method, name) = statsd_unwrap(method, name, :measure)
      def statsd_remove_distribution(method, name) = statsd_unwrap(method, name, :distribution)

      class << self
        # `tags` with `key:value` added, in the form it was given.
        def add_tag(tags, key, value)
          case tags
          when nil then { key => value }
          when Hash then tags.merge(key => value)
          when String then tags.empty? ? "#{key}:#{value}" : "#{tags},#{key}:#{value}"
          when Array then tags + ["#{key}:#{value}"]
          else raise ArgumentError, "tags must be a Hash, an Array or a String, not #{tags.class}"
          end
        end

        private

        # Calls the method; returns [truth, result, error]: truth is the
        # result, or the judging block's verdict on it (false if the block
        # raises). An error raised by the method makes truth false and is
        # returned, to be raised again once counted.
        def judged_call(call, judge)
          result = call.call
          truth = result
          if judge
            truth = begin
              judge.call(result)
            rescue StandardError
              false
            end
          end
          [truth, result, nil]
        rescue StandardError => e
          [false, nil, e]
        end
      end

      private

      # Wraps `method` in the client's `action` (`measure` or
      # `distribution`) with a block.
      def statsd_timed(action, method, name, sample_rate, tags, no_prefix, client)
        statsd_wrap(method, name, action) do |object, args, call|
          (client || StatsD.singleton_client).public_send(action, Instrument.generate_metric_name(name, object, *args),
            sample_rate: sample_rate, tags: Instrument.generate_tags(tags, object, *args), no_prefix: no_prefix, &call)
        end
      end

      def statsd_module(method, name, action)
        key = [method, name, action]
        mod = statsd_instrumentations[key]
        return mod if mod

        mod = Module.new
        @statsd_instrumentations = statsd_instrumentations.merge(key => mod)
        mod
      end

      # Defines `method` in a module prepended to this class: the module's
      # method yields the object, the arguments and a proc calling the
      # original (`super`) to `around`.
      def statsd_wrap(method, name, action, &around)
        mod = statsd_module(method, name, action)
        raise ArgumentError, "Already instrumented #{method} for #{self.name}" if mod.method_defined?(method) ||
          mod.private_method_defined?(method)
        unless method_defined?(method) || private_method_defined?(method)
          raise ArgumentError, "could not find method #{method} for #{self.name}"
        end

        visibility = if private_method_defined?(method) then :private
        elsif protected_method_defined?(method) then :protected
        else :public
        end
        mod.send(:define_method, method) do |*args, &block|
          around.call(self, args, -> { super(*args, &block) })
        end
        mod.send(:ruby2_keywords, method)
        mod.send(visibility, method)
        prepend(mod) unless self < mod
      end

      def statsd_unwrap(method, name, action)
        statsd_module(method, name, action).send(:remove_method, method)
      end
    end
  end
end
