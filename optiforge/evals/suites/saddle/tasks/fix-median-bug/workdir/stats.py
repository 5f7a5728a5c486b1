"""Print the count, mean and median of the numbers in a file.

The file holds one number a line; blank lines and lines starting with '#' are skipped.
The median is the middle value of the sorted numbers, or the mean of the two middle
values when there is an even count. Output, three lines:

    count=N
    mean=M (3 decimals)
    median=D (3 decimals)
"""

import sys


def read_numbers(path: str) -> list[float]:
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 0:
        return max(ordered[mid - 1], ordered[mid])
    return ordered[mid]


def main() -> None:
    values = read_numbers(sys.argv[1])
    print(f"count={len(values)}")
    print(f"mean={sum(values) / len(values):.3f}")
    print(f"median={median(values):.3f}")


if __name__ == "__main__":
    main()
