# frozen_string_literal: true

require "ffi"

module Shmetrics
  module StatsD
    # The few store calls the facade makes, over libshmetrics' C ABI.
    #
    # TEMPORARY: the gem's native API (Shmetrics::Store) is being written
    # alongside; until it lands this module reaches the C ABI through
    # ruby-ffi itself. Once it lands, these methods call the native API
    # and this FFI part goes.
    module Backend
      # The name is taken by a family of another definition (a different
      # kind, labels or buckets), in this or another process.
      class Conflict < Error; end

      # Any other failure of the store.
      class StoreError < Error; end

      # :nodoc:
      module Lib
        extend FFI::Library

        # SHMETRICS_LIBRARY, else the library built in this repository.
        def self.path
          ENV["SHMETRICS_LIBRARY"] || %w[release debug].map do |p|
            File.expand_path("../../../../../target/#{p}/libshmetrics.so", __dir__)
          end.find { |f| File.exist?(f) } || "libshmetrics.so"
        end
        ffi_lib path

        class Str < FFI::Struct
          layout :ptr, :pointer, :len, :size_t
        end

        class Options < FFI::Struct
          layout :create, :bool, :read_only, :bool, :mode, :uint32, :max_families, :uint32,
            :max_series, :uint32, :label_bytes, :uint64, :max_writers, :uint32,
            :cells_per_writer, :uint64, :sketch_cells_per_writer, :uint64, :owner, :int64, :group, :int64
        end

        class FamilyDesc < FFI::Struct
          layout :name, Str, :help, Str, :unit, Str, :label_names, :pointer, :label_count, :size_t,
            :kind, :uint32, :gauge_mode, :uint32, :buckets, :pointer, :bucket_count, :size_t,
            :quantiles, :pointer, :quantile_count, :size_t, :max_age_ms, :uint64, :age_buckets, :uint32,
            :max_series, :uint32, :native, :bool, :native_bucket_factor, :double,
            :native_zero_threshold, :double, :native_max_buckets, :uint32, :exemplars, :bool,
            :ttl_ms, :uint64, :name_as_given, :bool
        end

        class Family < FFI::Struct
          layout :kind, :uint32, :label_count, :uint32, :opaque, [:uint64, 6]
        end

        class Series < FFI::Struct
          layout :opaque, [:uint64, 6]
        end

        attach_function :options_default, :shmetrics_options_default, [Options.by_ref], :uint32
        attach_function :store_open_persistent, :shmetrics_store_open_persistent,
          [:pointer, :size_t, Options.by_ref, :pointer], :uint32
        attach_function :register, :shmetrics_register, [:pointer, FamilyDesc.by_ref, Family.by_ref], :uint32
        attach_function :series_get, :shmetrics_series_get,
          [:pointer, Family.by_ref, :pointer, :size_t, Series.by_ref], :uint32
        attach_function :counter_add, :shmetrics_counter_add, [:pointer, :pointer, :double], :uint32
        attach_function :gauge_set, :shmetrics_gauge_set, [:pointer, :pointer, :double], :uint32
        attach_function :observe, :shmetrics_observe, [:pointer, :pointer, :double], :uint32
        attach_function :last_error, :shmetrics_last_error, [:pointer, :size_t, :pointer], :uint32
      end

      OK = 0
      CONFLICT = 10
      OVERFLOW = 12
      KIND = { counter: 1, gauge: 2, histogram: 3 }.freeze
      GAUGE_SHARED = 11

      class << self
        def open(path)
          opts = Lib::Options.new
          check(Lib.options_default(opts))
          out = FFI::MemoryPointer.new(:pointer)
          check(Lib.store_open_persistent(path, path.bytesize, opts, out))
          out.read_pointer
        end

        # The family name of a StatsD name: `.` becomes `:` (which the
        # exporter sends back as `.` with `--statsd.colons-as-dots`), any
        # other character but letters, digits and `_` becomes `_`.
        def family_name(full)
          name = full.tr(".", ":").gsub(/[^a-zA-Z0-9_:]/, "_")
          name.match?(/\A\d/) ? "_#{name}" : name
        end

        def register(store, kind, name, label_names, buckets)
          keep = []
          desc = Lib::FamilyDesc.new
          set_str(desc[:name], name, keep)
          set_str(desc[:help], "StatsD #{kind} (shmetrics StatsD facade)", keep)
          names = FFI::MemoryPointer.new(Lib::Str, [label_names.size, 1].max)
          label_names.each_with_index { |l, i| set_str(Lib::Str.new(names + i * Lib::Str.size), l, keep) }
          desc[:label_names] = names
          desc[:label_count] = label_names.size
          desc[:kind] = KIND.fetch(kind)
          if kind == :gauge
            desc[:gauge_mode] = GAUGE_SHARED
          elsif kind == :histogram
            b = FFI::MemoryPointer.new(:double, buckets.size)
            b.write_array_of_double(buckets)
            keep << b
            desc[:buckets] = b
            desc[:bucket_count] = buckets.size
          end
          family = Lib::Family.new
          rc = Lib.register(store, desc, family)
          raise Conflict, "#{name}: #{message(rc)}" if rc == CONFLICT

          check(rc)
          family
        end

        # The label names of an existing family: not reachable through this
        # backend, so a conflict is raised to the caller.
        def label_names(_store, _kind, _name) = nil

        # The series handle (a pointer the update calls take).
        def series(store, family, values)
          keep = []
          vals = FFI::MemoryPointer.new(Lib::Str, [values.size, 1].max)
          values.each_with_index { |v, i| set_str(Lib::Str.new(vals + i * Lib::Str.size), v, keep) }
          s = Lib::Series.new
          rc = Lib.series_get(store, family, vals, values.size, s)
          check(rc) unless rc == OVERFLOW
          s.pointer
        end

        def add(store, series, v)
          (rc = Lib.counter_add(store, series, v)) == OK || check(rc)
        end

        def set(store, series, v)
          (rc = Lib.gauge_set(store, series, v)) == OK || check(rc)
        end

        def observe(store, series, v)
          (rc = Lib.observe(store, series, v)) == OK || check(rc)
        end

        # Raises for a result code other than OK.
        def check(rc)
          return rc if rc == OK

          raise StoreError, message(rc)
        end

        private

        def set_str(str, s, keep)
          m = FFI::MemoryPointer.from_string(s)
          keep << m
          str[:ptr] = m
          str[:len] = s.bytesize
        end

        def message(rc)
          buf = FFI::MemoryPointer.new(:char, 512)
          len = FFI::MemoryPointer.new(:size_t)
          Lib.last_error(buf, 512, len)
          "#{buf.read_string([len.read(:size_t), 511].min)} (code #{rc})"
        end
      end
    end
  end
end
