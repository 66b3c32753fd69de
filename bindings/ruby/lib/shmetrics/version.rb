# frozen_string_literal: true

module Shmetrics
  # The gem's version. Its major is the C ABI major the gem is written for:
  # a libshmetrics of another major is refused (Shmetrics::Native.load).
  VERSION = "1.0.0"
end
