"""Built-in functions (test_python.py): math.sqrt 5 times, list.append 3
times, len once, from main."""
import math


def main():
    items = []
    for i in range(5):
        math.sqrt(i)
    for i in range(3):
        items.append(i)
    print(len(items))


main()
