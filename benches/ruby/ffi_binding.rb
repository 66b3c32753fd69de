# frozen_string_literal: true

# A minimal ruby-ffi binding of the hot path, for benches/ruby/ops.rb only:
# what the gem's update would cost had it been written on ruby-ffi instead
# of a C extension (a Ruby Hash of label sets to series handles, then one
# FFI call). Not part of the gem.
require "ffi"

class FfiBinding
  module C
    extend FFI::Library
    ffi_lib ENV.fetch("SHMETRICS_LIBRARY", "libshmetrics.so.1")
    class Str < FFI::Struct
      layout :ptr, :pointer, :len, :size_t
    end
    # The leading fields of shmetrics_family_desc; the rest stay zero.
    class Desc < FFI::Struct
      layout :name, Str, :help, Str, :unit, Str, :label_names, :pointer, :label_count, :size_t,
             :kind, :uint32, :rest, [:uint8, 256]
    end
    attach_function :shmetrics_store_open, %i[pointer size_t pointer pointer], :uint32
    attach_function :shmetrics_register, %i[pointer pointer pointer], :uint32
    attach_function :shmetrics_series_get, %i[pointer pointer pointer size_t pointer], :uint32
    attach_function :shmetrics_counter_add, %i[pointer pointer double], :uint32
  end

  def initialize(path)
    out = FFI::MemoryPointer.new(:pointer)
    rc = C.shmetrics_store_open(path, path.bytesize, nil, out)
    raise "open: #{rc}" unless rc.zero?
    @store = out.read_pointer
  end

  def counter(name, labels)
    Counter.new(@store, name, labels)
  end

  def self.strs(strings)
    keep = strings.map { |s| FFI::MemoryPointer.from_string(s) }
    arr = FFI::MemoryPointer.new(C::Str, strings.size)
    strings.each_with_index do |s, i|
      st = C::Str.new(arr + i * C::Str.size)
      st[:ptr] = keep[i]
      st[:len] = s.bytesize
    end
    [arr, keep]
  end

  class Counter
    def initialize(store, name, labels)
      @store = store
      @labels = labels.map(&:to_sym)
      @cache = {}
      desc = C::Desc.new
      @keep = FfiBinding.strs([name] + labels)
      desc[:name][:ptr] = @keep[1][0]
      desc[:name][:len] = name.bytesize
      desc[:label_names] = @keep[0] + C::Str.size
      desc[:label_count] = labels.size
      desc[:kind] = 1
      @family = FFI::MemoryPointer.new(:uint8, 56)
      rc = C.shmetrics_register(store, desc, @family)
      raise "register: #{rc}" unless rc.zero?
    end

    def increment(by: 1, labels: {})
      s = @cache[labels] || lookup(labels)
      C.shmetrics_counter_add(@store, s, by.to_f)
    end

    private

    def lookup(labels)
      arr, _keep = FfiBinding.strs(@labels.map { |l| labels.fetch(l).to_s })
      s = FFI::MemoryPointer.new(:uint8, 48)
      rc = C.shmetrics_series_get(@store, @family, arr, @labels.size, s)
      raise "series: #{rc}" unless rc.zero?
      @cache[labels.dup.freeze] = s
    end
  end
end
