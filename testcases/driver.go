package testcases

import (
	"strconv"
	"strings"
)

// driverHead comes before the solution: the standard modules a call-based
// solution may use without importing them. The order is verl's: it decides
// which module's name wins (builtins' pow over math's, for instance), and
// the plain imports come last so that e.g. `datetime` is the module. verl
// imports builtins and typing only with a star, so do we. (The driver's
// traceback module is imported only when a call fails.)
const driverHead = `from string import *
from re import *
from datetime import *
from collections import *
from heapq import *
from bisect import *
from copy import *
from math import *
from random import *
from statistics import *
from itertools import *
from functools import *
from operator import *
from io import *
from sys import *
from json import *
from builtins import *
from typing import *
import string
import re
import datetime
import collections
import heapq
import bisect
import copy
import math
import random
import statistics
import itertools
import functools
import operator
import io
import sys
import json

`

// DriverHead is the text every fn_name program begins with: its imports.
// The embedded sandbox can have them imported before such a program starts
// (sandbox.Options.PythonPrelude).
const DriverHead = driverHead

// driverTail follows the solution and the assignment of _verl_fn_name. Like
// verl's driver it looks names up in the module's globals at run time, so a
// solution that rebinds them sees the same effect it would under verl.
const driverTail = `

def _verl_call():
    raw = sys.stdin.read()
    args = []
    if raw.strip():
        try:
            args = [json.loads(piece) for piece in raw.split("\n")]
        except json.JSONDecodeError as exc:
            sys.stderr.write("driver: the arguments for %r are not JSON, one per line: %s\n" % (_verl_fn_name, exc))
            return None, False
    try:
        target = None
        if _verl_fn_name in globals():
            target = globals()[_verl_fn_name]
        elif "Solution" in globals():
            target = getattr(globals()["Solution"](), _verl_fn_name)
        if not target:
            sys.stderr.write("driver: no function or Solution method named %r\n" % (_verl_fn_name,))
            return None, False
        return target(*args), True
    except Exception:
        # Imported here, not with the modules above: it is the driver's
        # own, costs a quarter of their import time, and a solution sees
        # no name verl's driver does not give it.
        import traceback as _verl_traceback
        sys.stderr.write("driver: calling %r failed:\n%s" % (_verl_fn_name, _verl_traceback.format_exc()))
        return None, False


if __name__ == "__main__":
    _verl_result, _verl_ok = _verl_call()
    if _verl_ok:
        if isinstance(_verl_result, (dict, list, tuple)) or _verl_result is None or isinstance(_verl_result, bool):
            print(json.dumps(_verl_result))
        else:
            print(str(_verl_result))
`

// WrapFnName returns the Python driver program around solution for
// call-based cases (docs/semantics.md §3). The program imports the usual standard modules
// (plain and star), holds the solution verbatim, reads all of stdin and,
// unless it is blank, JSON-decodes each "\n"-separated piece into one
// positional argument; it calls the global fnName if there is one, else
// Solution().fnName, and prints the result: json.dumps for dict, list,
// tuple, None and bool, str() otherwise. A decoding error, a missing
// function or an exception goes to stderr with nothing on stdout and exit
// code 0. fnName enters the program as an escaped string literal, so any
// text is safe.
func WrapFnName(solution, fnName string) string {
	return wrap(solution, "", "", fnName)
}

// wrap builds the driver around solution+sep+assert without building the
// joined text first.
func wrap(solution, sep, assert, fnName string) string {
	lit := strconv.QuoteToASCII(fnName) // a valid Python literal too
	var b strings.Builder
	b.Grow(len(driverHead) + len(solution) + len(sep) + len(assert) + len(lit) + len(driverTail) + 32)
	b.WriteString(driverHead)
	b.WriteString(solution)
	b.WriteString(sep)
	b.WriteString(assert)
	b.WriteString("\n\n_verl_fn_name = ")
	b.WriteString(lit)
	b.WriteString(driverTail)
	return b.String()
}
