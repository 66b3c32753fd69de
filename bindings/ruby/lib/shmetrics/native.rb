# frozen_string_literal: true

module Shmetrics
  # Loading libshmetrics, the C library the gem's native part calls.
  #
  # The library is looked up as the PHP and Lua bindings do: the path given
  # to Native.load, else `$SHMETRICS_LIBRARY` alone, else the names the
  # dynamic loader finds on the system's library path,
  # `libshmetrics.so.<major>` (the library's SONAME) first. A library of
  # another major version is refused with an error naming both versions.
  module Native
    class << self
      # The file name the library was loaded from, once loaded.
      attr_reader :library

      # The names tried, in turn, for `explicit` (a path, or nil).
      def candidates(explicit = nil)
        return [explicit.to_s] if explicit
        env = ENV["SHMETRICS_LIBRARY"]
        return [env] if env && !env.empty?
        ["libshmetrics.so.#{ABI_MAJOR}", "libshmetrics.so"]
      end

      # Loads the library (once per process) and returns its version.
      # Raises LibraryVersionError for a library of another major version,
      # LibraryError when none can be loaded.
      def load(explicit = nil)
        return @version if loaded?
        errors = []
        candidates(explicit).each do |name|
          begin
            @version = __load(name, ABI_MAJOR)
            @library = name
            return @version
          rescue LibraryVersionError
            raise
          rescue LibraryError => e
            errors << "'#{name}': #{e.message}"
          end
        end
        raise LibraryError,
              "shmetrics: cannot load the library: #{errors.join('; ')} (install " \
              "libshmetrics.so.#{ABI_MAJOR} on the system's library path, or build it with " \
              "`cargo build --release -p shmetrics-ffi` and set $SHMETRICS_LIBRARY to its path)"
      end

      # The loaded library's version ("1.0.0"), nil before it is loaded.
      def version
        @version
      end
    end
  end
end
