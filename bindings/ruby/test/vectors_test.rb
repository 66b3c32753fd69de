# frozen_string_literal: true

# The shared test vectors (tests/vectors/updates.json) through the Ruby
# native API. The C ABI, Python, PHP and Lua run the same file; all must
# render the same text. The gem registers under the legacy name rules (as
# prometheus-client checks names), so every `register_errors` case,
# `legacy_only` ones too, must be refused. Ruby's API has no native
# histograms: the cases and definitions with a `native` family are the
# other runners'.

require_relative "test_helper"
require "json"

class VectorsTest < Minitest::Test
  include ShmetricsTest

  VECTORS = JSON.parse(File.read(File.expand_path("../../../tests/vectors/updates.json", __dir__)))
  ERRORS = {
    "invalid_value" => Shmetrics::InvalidValueError,
    "label_count" => Shmetrics::LabelError,
    "invalid_name" => Shmetrics::InvalidNameError,
    "invalid_options" => Shmetrics::InvalidOptionsError
  }.freeze

  def value(v)
    { "NaN" => Float::NAN, "+Inf" => Float::INFINITY, "-Inf" => -Float::INFINITY }.fetch(v, v)
  end

  def make(fam)
    common = { help: fam["help"], labels: fam["labels"].map(&:to_sym) }
    case fam["kind"]
    when "counter" then @store.counter(fam["name"].to_sym, exemplars: fam["exemplars"] || false, **common)
    when "gauge" then @store.gauge(fam["name"].to_sym, mode: fam["mode"].to_sym, **common)
    when "histogram"
      @store.histogram(fam["name"].to_sym, buckets: fam["buckets"]&.map { |b| value(b) },
                                           exemplars: fam["exemplars"] || false, **common)
    when "summary"
      @store.summary(fam["name"].to_sym, quantiles: fam["quantiles"]&.map { |q| value(q) }, **common)
    else raise "unknown kind #{fam['kind']}"
    end
  end

  # The op's label values as a Hash by the family's label names; values
  # past the names get names of their own, so a count that differs is
  # refused as it is by the other runners.
  def labels(fam, values)
    names = fam["labels"]
    values.each_with_index.to_h { |v, i| [(names[i] || "extra#{i}").to_sym, v] }
  end

  def apply(families, op)
    fam, metric = families.fetch(op["family"])
    l = labels(fam, op["labels"])
    v = value(op["value"])
    case op["op"]
    when "inc" then op["exemplar"] ? metric.increment(by: v, labels: l, exemplar: op["exemplar"]) : metric.increment(by: v, labels: l)
    when "set" then metric.set(v, labels: l)
    when "observe" then op["exemplar"] ? metric.observe(v, labels: l, exemplar: op["exemplar"]) : metric.observe(v, labels: l)
    else raise "unknown op #{op['op']}"
    end
  end

  # An OpenMetrics exposition as the vectors write it: without `_created`
  # samples, each exemplar's timestamp written `T`.
  def normalize_openmetrics(text)
    text.lines.reject { |l| l.split(/[{ ]/, 2).first.end_with?("_created") }
        .map { |l| l.include?(" # {") ? l.sub(/ \S+\n\z/, " T\n") : l }.join
  end

  VECTORS["cases"].each_with_index do |c, i|
    next if c["families"].any? { |f| f.key?("native") }

    define_method("test_case_#{i}") do
      families = c["families"].to_h { |f| [f["name"], [f, make(f)]] }
      c["ops"].each { |op| apply(families, op) }
      c["errors"].each do |e|
        assert_raises(ERRORS.fetch(e["error"]), e.to_json) { apply(families, e) }
      end
      assert_equal c["text"], @store.render, c["name"]
      if c["openmetrics"]
        assert_equal c["openmetrics"], normalize_openmetrics(@store.render(:openmetrics)), c["name"]
      end
    end
  end

  def test_register_errors_under_the_legacy_rules
    VECTORS["register_errors"].each do |bad|
      next if bad["family"].key?("native")

      assert_raises(ERRORS.fetch(bad["error"]), bad.to_json) { make(bad["family"]) }
    end
  end
end
