// Testbench for the generated BoundRow (target/hdl/bound_row.v, 8 lanes).
//
// Reads one line per clock from +vectors=<file>:
//   in_valid q_neg min0 .. min7 max0 .. max7  (hex; q_neg packed, lane j in bit j)
// applies it, gives one rising edge, and after the edge writes each
// output beat to +out=<file> as "<clock> <o0> .. <o7>" (decimal clock,
// hex fp16 bits), the sampling point of hdl::sim::tick.
// tests/verilog_cosim.rs compares it with attention::engine::bound_row.
`timescale 1ns / 1ps
module bound_row_tb;
    reg clock = 1'b0;
    reg in_valid = 1'b0;
    reg [7:0] q_neg = 8'd0;
    reg [15:0] mn [0:7];
    reg [15:0] mx [0:7];
    wire out_valid;
    wire [15:0] o0, o1, o2, o3, o4, o5, o6, o7;

    bound_row dut (
        .clock(clock), .in_valid(in_valid),
        .k_min$0(mn[0]), .k_min$1(mn[1]), .k_min$2(mn[2]), .k_min$3(mn[3]),
        .k_min$4(mn[4]), .k_min$5(mn[5]), .k_min$6(mn[6]), .k_min$7(mn[7]),
        .k_max$0(mx[0]), .k_max$1(mx[1]), .k_max$2(mx[2]), .k_max$3(mx[3]),
        .k_max$4(mx[4]), .k_max$5(mx[5]), .k_max$6(mx[6]), .k_max$7(mx[7]),
        .q_neg$0(q_neg[0]), .q_neg$1(q_neg[1]), .q_neg$2(q_neg[2]), .q_neg$3(q_neg[3]),
        .q_neg$4(q_neg[4]), .q_neg$5(q_neg[5]), .q_neg$6(q_neg[6]), .q_neg$7(q_neg[7]),
        .out_valid(out_valid),
        .out_data$0(o0), .out_data$1(o1), .out_data$2(o2), .out_data$3(o3),
        .out_data$4(o4), .out_data$5(o5), .out_data$6(o6), .out_data$7(o7)
    );

    integer fin, fout, n, t, j;
    reg [8*1024-1:0] vec_path, out_path;

    task read_line;
        begin
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                        in_valid, q_neg, mn[0], mn[1], mn[2], mn[3], mn[4], mn[5], mn[6], mn[7],
                        mx[0], mx[1], mx[2], mx[3], mx[4], mx[5], mx[6], mx[7]);
        end
    endtask

    initial begin
        for (j = 0; j < 8; j = j + 1) begin
            mn[j] = 16'd0;
            mx[j] = 16'd0;
        end
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        read_line;
        while (n == 18) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid) $fwrite(fout, "%0d %h %h %h %h %h %h %h %h\n", t, o0, o1, o2, o3, o4, o5, o6, o7);
            t = t + 1;
            read_line;
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
