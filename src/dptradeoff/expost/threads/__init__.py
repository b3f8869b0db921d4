"""Paper 004 Tables 1-2: the thread-estimation protocol (protocol.py), the orders of the threads
(orders.py) and each table's methods (table1.py: pure DP, table2.py: approximate DP)."""
from .orders import THREAD_ORDERS, ThreadOrder  # noqa: F401
from .protocol import ACCEPT_SIGMAS, Outcome, Setting, ThreadMethod, ThreadTable, accepted  # noqa: F401
from .table1 import Alg3, Alg3AsPublished, Doubling, NoiseReduction, Table1  # noqa: F401
from .table2 import Alg3Gaussian, Alg3GaussianAsPublished, Brownian, DoublingGaussian, Table2  # noqa: F401

TABLES: dict[str, type[ThreadTable]] = {table.name: table for table in (Table1, Table2)}
