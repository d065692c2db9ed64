"""``python -m airflow_hoodie.cli``: the ``airflow-hoodie`` command."""

import sys

from airflow_hoodie.cli import main

sys.exit(main())
