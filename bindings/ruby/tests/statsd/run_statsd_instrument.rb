# frozen_string_literal: true

# Runs statsd-instrument 3.11.0's own tests of its public API against the
# facade, from the pinned copy (STATSD_INSTRUMENT_DIR, or
# ../shared/peers/statsd-instrument-v3.11.0 beside the repository).
#
# KNOWN lists the tests that fail on purpose, each with its reason (also
# in docs/ruby.md). The run fails if any other test fails or errors, and
# if a test listed in KNOWN passes (the list must be kept true).

root = File.expand_path("../../../..", __dir__)
# ../shared beside the repository; ../../shared for a git worktree.
candidates = [ENV["STATSD_INSTRUMENT_DIR"], "../shared", "../../shared"].compact.map do |d|
  d.end_with?("shared") ? File.expand_path("#{d}/peers/statsd-instrument-v3.11.0", root) : d
end
dir = candidates.find { |d| File.directory?(File.join(d, "test")) } or
  abort "statsd-instrument 3.11.0 not found (tried #{candidates.join(", ")}); set STATSD_INSTRUMENT_DIR"

$LOAD_PATH.unshift(__dir__, File.join(__dir__, "shim"))
# The gem as installed by scripts/ruby-statsd-tests.sh, or this tree's lib
# with a build of its native part in SHMETRICS_RUBY_EXT_DIR.
if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
  $LOAD_PATH.unshift(ext, File.expand_path("../../lib", __dir__))
end

# The test files that exercise the public API (not datagram bytes, sinks,
# sockets, the aggregator or the environment parser).
FILES = %w[
  statsd_test.rb statsd_instrumentation_test.rb assertions_test.rb helpers_test.rb matchers_test.rb
].freeze

# "Class#test_name" => why it cannot pass against the facade.
KNOWN = {}.freeze

require_relative "test_helper"
FILES.each { |f| require File.join(dir, "test", f) }

module Minitest
  # Counts results and compares them with KNOWN.
  class ShmetricsStatsdReporter < AbstractReporter
    def initialize
      super
      @results = []
    end

    def record(result)
      @results << result
    end

    def passed?
      unexpected.empty? && stale.empty?
    end

    def report
      fails = @results.reject { |r| r.passed? || r.skipped? }
      skipped = @results.count(&:skipped?)
      puts "statsd-instrument tests: #{@results.size} run, #{@results.size - fails.size - skipped} passed, " \
        "#{fails.size} failed (#{(fails.map { |r| key(r) } & KNOWN.keys).size} known), #{skipped} skipped"
      unexpected.each { |r| puts "UNEXPECTED FAILURE #{key(r)}: #{r.failure.message.lines.first(3).join}" }
      stale.each { |k| puts "LISTED AS FAILING BUT PASSED: #{k}" }
    end

    private

    def key(r) = "#{r.klass}##{r.name}"

    def unexpected = @results.reject { |r| r.passed? || KNOWN.key?(key(r)) }

    def stale = @results.select(&:passed?).map { |r| key(r) } & KNOWN.keys
  end

  def self.plugin_shmetrics_statsd_init(_options)
    reporter << ShmetricsStatsdReporter.new
  end
  extensions << "shmetrics_statsd"
end
