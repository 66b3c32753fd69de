# frozen_string_literal: true

# Reads rspec's JSON report (ARGV[0]) of the run of prometheus-client's
# specs on Shmetrics::DataStore, prints the counts and every failure, and
# exits non-zero unless the failing examples are exactly those of
# expected-failures.txt (ARGV[1]). Paths are shown relative to
# $CLIENT_RUBY_DIR for the peer's files.
require "json"

report = JSON.parse(File.read(ARGV.fetch(0)))
peer = File.expand_path(ENV.fetch("CLIENT_RUBY_DIR"))
expected = File.readlines(ARGV.fetch(1)).map(&:strip).reject { |l| l.empty? || l.start_with?("#") }
                .to_h { |l| l.split(" ", 2) }

where = lambda do |e|
  path = File.expand_path(e["file_path"])
  path = path.delete_prefix("#{peer}/") if path.start_with?("#{peer}/")
  "#{path}:#{e['line_number']}"
end
examples = report["examples"]
failed = examples.select { |e| e["status"] == "failed" }
by_file = examples.group_by { |e| where.call(e).split(":").first }
by_file.sort.each do |file, es|
  f = es.count { |e| e["status"] == "failed" }
  puts format("  %-58s %3d examples, %3d passed, %2d failed", file, es.size, es.size - f, f)
end
puts "#{examples.size} examples, #{examples.size - failed.size} passed, #{failed.size} failed"
failed.each do |e|
  puts "  failed: #{where.call(e)} #{e['full_description']}"
  puts "          #{e.dig('exception', 'message').to_s.lines.first(3).map(&:strip).join(' ')}"
end

ok = true
outside = report.dig("summary", "errors_outside_of_examples_count").to_i
if outside.positive?
  puts "#{outside} error(s) outside of examples (a spec file did not load; see above)"
  ok = false
end
unexpected = failed.map(&where) - expected.keys
missing = expected.keys - failed.map(&where)
unexpected.each { |w| puts "UNEXPECTED FAILURE: #{w}" }
missing.each { |w| puts "EXPECTED TO FAIL, BUT PASSED (update expected-failures.txt and docs/ruby.md): #{w}" }
ok &&= unexpected.empty? && missing.empty?
exit(ok ? 0 : 1)
