// SPDX-License-Identifier: GPL-2.0
// The JVM of tests/jvm/ (tests/jvm/jvm.sh runs it with -XX:CompileCommand=dontinline for hot() and late(), so
// that the JIT keeps each a method of its own): main calls hot() forever, or with an argument N, hot() for the
// first N seconds and late() after, so that late() is compiled after a daemon's first perf-map requests.
public class Hot {
	static long hot(long seed) {
		long x = seed;
		for (int i = 0; i < 1_000_000; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long late(long seed) {
		long x = seed;
		for (int i = 0; i < 1_000_000; i++)
			x = x * 2862933555777941757L + 3037000493L;
		return x;
	}

	public static void main(String[] args) {
		long switchAt = args.length > 0 ? System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L : 0;
		long x = 1;
		while (args.length == 0 || System.nanoTime() < switchAt)
			x = hot(x);
		for (;;)
			x = late(x);
	}
}
