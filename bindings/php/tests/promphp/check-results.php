<?php

// Checks a JUnit log of PromPHP's suite on ShmetricsAdapter against
// expected-failures.txt, exactly: the number of tests must be the one the
// file names, and the tests that did not pass (failed, errored, skipped,
// risky) must be exactly the ones it lists. Prints the pass count.
//   php check-results.php JUNIT.xml expected-failures.txt

declare(strict_types=1);

[, $junit, $expectedFile] = $argv + [null, null, null];
if (!is_string($junit) || !is_string($expectedFile)) {
    fwrite(STDERR, "usage: php check-results.php JUNIT.xml expected-failures.txt\n");
    exit(2);
}

$tests = null;
$expected = [];
foreach (file($expectedFile, FILE_IGNORE_NEW_LINES) ?: [] as $line) {
    $line = trim($line);
    if ($line === '' || $line[0] === '#') {
        continue;
    }
    if ($tests === null) {
        $tests = (int) preg_replace('/^tests:\s*/', '', $line);
        continue;
    }
    $expected[] = $line;
}

$xml = is_file($junit) ? simplexml_load_file($junit) : false;
if ($xml === false) {
    fwrite(STDERR, "no JUnit log at $junit: PHPUnit did not finish\n");
    exit(1);
}
$ran = 0;
$failed = [];
foreach ($xml->xpath('//testcase') ?: [] as $case) {
    $ran++;
    if ($case->xpath('failure|error|skipped') !== []) {
        // A data set's cases are named "method with data set ...".
        $method = preg_replace('/ with data set .*$/', '', (string) $case['name']);
        $failed[] = substr(strrchr('\\' . (string) $case['class'], '\\'), 1) . '::' . $method;
    }
}

$problems = [];
if ($ran !== $tests) {
    $problems[] = "PromPHP's suite ran $ran tests, expected $tests";
}
foreach (array_diff($failed, $expected) as $t) {
    $problems[] = "new failure: $t (see the output above)";
}
foreach (array_diff($expected, $failed) as $t) {
    $problems[] = "now passes: $t (remove it from $expectedFile and docs/php.md)";
}
printf("PromPHP's suite on ShmetricsAdapter: %d of %d tests pass\n", $ran - count($failed), $ran);
if ($problems !== []) {
    fwrite(STDERR, implode("\n", $problems) . "\n");
    exit(1);
}
