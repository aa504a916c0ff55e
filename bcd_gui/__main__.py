import sys


def main() -> int:
    print("The bcd dashboard is not built yet; use the `bcd` command line.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
