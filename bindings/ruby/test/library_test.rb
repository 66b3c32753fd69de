# frozen_string_literal: true

require_relative "test_helper"

# How the gem finds libshmetrics: $SHMETRICS_LIBRARY, else the system's
# loader (libshmetrics.so.<major>), never a path into a checkout; and a
# library of another major version is refused.
class LibraryTest < Minitest::Test
  include Subprocess

  def test_candidates
    Shmetrics::Native.stub(:loaded?, false) do
      assert_equal ["/x/lib.so"], Shmetrics::Native.candidates("/x/lib.so")
    end
    old = ENV.delete("SHMETRICS_LIBRARY")
    assert_equal ["libshmetrics.so.#{Shmetrics::Native::ABI_MAJOR}", "libshmetrics.so"],
                 Shmetrics::Native.candidates
    ENV["SHMETRICS_LIBRARY"] = "/y/libshmetrics.so"
    assert_equal ["/y/libshmetrics.so"], Shmetrics::Native.candidates
  ensure
    old ? ENV["SHMETRICS_LIBRARY"] = old : ENV.delete("SHMETRICS_LIBRARY")
  end

  def test_missing_library_says_where_it_looked
    out, err, st = ruby_run("Shmetrics::Store.new('/dev/shm/never')",
                            "SHMETRICS_LIBRARY" => nil, "LD_LIBRARY_PATH" => "/nonexistent")
    refute st.success?, out
    assert_includes err, "Shmetrics::LibraryError"
    assert_includes err, "'libshmetrics.so.#{Shmetrics::Native::ABI_MAJOR}'"
    assert_includes err, "$SHMETRICS_LIBRARY"
  end

  def test_library_of_another_major_is_refused
    other = ENV.fetch("SHMETRICS_OTHER_MAJOR_LIBRARY") do
      flunk "SHMETRICS_OTHER_MAJOR_LIBRARY is not set (scripts/ruby-tests.sh builds it)"
    end
    _, err, st = ruby_run("Shmetrics::Store.new('/dev/shm/never')", "SHMETRICS_LIBRARY" => other)
    refute st.success?
    major = Shmetrics::Native::ABI_MAJOR
    assert_includes err, "Shmetrics::LibraryVersionError"
    assert_includes err, "is version #{major + 1}.0.0 (major #{major + 1})"
    assert_includes err, "written for major #{major}"
  end

  def test_loads_through_the_system_loader_by_soname
    lib = ENV.fetch("SHMETRICS_LIBRARY")
    dir = Dir.mktmpdir
    File.symlink(lib, File.join(dir, "libshmetrics.so.#{Shmetrics::Native::ABI_MAJOR}"))
    out, err, st = ruby_run("Shmetrics::Native.load; print Shmetrics::Native.library",
                            "SHMETRICS_LIBRARY" => nil, "LD_LIBRARY_PATH" => dir)
    assert st.success?, err
    assert_equal "libshmetrics.so.#{Shmetrics::Native::ABI_MAJOR}", out
  ensure
    FileUtils.rm_rf(dir) if dir
  end
end
