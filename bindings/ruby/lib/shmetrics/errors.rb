# frozen_string_literal: true

module Shmetrics
  # Every error the gem raises. `code` is the C ABI's result code
  # (`SHMETRICS_*` in shmetrics.h), nil for errors of the gem itself; the
  # message is the library's, which names the store file and says what to
  # fix.
  class Error < StandardError
    attr_reader :code
  end

  # libshmetrics cannot be loaded: not found, or not a libshmetrics.
  class LibraryError < Error; end
  # libshmetrics is of another major version than the gem.
  class LibraryVersionError < LibraryError; end

  # The store file cannot be created, opened, sized or mapped.
  class IoError < Error; end
  # The file is not a shmetrics store; it was left untouched.
  class ForeignFileError < Error; end
  # The file was written by an incompatible layout version.
  class VersionMismatchError < Error; end
  # The file is shorter than its header says.
  class TruncatedError < Error; end
  # The file is corrupt, or a handle points outside the store.
  class CorruptError < Error; end
  # A metric or label name breaks the Prometheus rules or is reserved.
  class InvalidNameError < Error; end
  # The labels of an update are not the family's label names.
  class LabelError < Error; end
  # A value is NaN, or a counter was given a negative or infinite amount.
  class InvalidValueError < Error; end
  # Options are out of range (buckets not increasing, an unknown mode...).
  class InvalidOptionsError < Error; end
  # A family of that name is registered with another definition.
  class ConflictError < Error; end
  # The store has no room for another family.
  class StoreFullError < Error; end
  # An update of the wrong type (a gauge set on a counter).
  class WrongTypeError < Error; end
  # A handle that is no longer valid (never raised by the metrics, which
  # look the series up again).
  class StaleHandleError < Error; end
  # The store was opened read-only and was asked to write.
  class ReadOnlyError < Error; end
  # No consistent snapshot could be taken; try again.
  class BusyError < Error; end
  # The store file's owner, type or permissions are not trusted.
  class UntrustedError < Error; end
  # A string is not valid UTF-8.
  class InvalidUtf8Error < Error; end
  # An argument is out of range.
  class InvalidArgumentError < Error; end
  # The library hit an internal bug; please report it with the message.
  class PanicError < Error; end

  # Result codes of the C ABI and the classes raised for them; codes not
  # listed raise Shmetrics::Error.
  ERROR_CLASSES = [
    [1, IoError], [2, ForeignFileError], [3, VersionMismatchError],
    [4, TruncatedError], [5, CorruptError], [6, InvalidNameError],
    [7, LabelError], [8, InvalidValueError], [9, InvalidOptionsError],
    [10, ConflictError], [11, StoreFullError], [13, WrongTypeError],
    [14, StaleHandleError], [15, ReadOnlyError], [16, BusyError],
    [17, UntrustedError], [101, InvalidUtf8Error], [103, PanicError],
    [104, InvalidArgumentError]
  ].freeze
end
